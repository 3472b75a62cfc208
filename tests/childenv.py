"""The environment for a child Python process in a test: the repository (and extra folders)
first on ``PYTHONPATH``, whatever was on it kept after them (on the GPU machine that is where a
compatible NumPy shadows the image's own)."""

import os


def pythonpath(*folders) -> str:
    return os.pathsep.join([*(str(f) for f in folders), os.environ.get("PYTHONPATH", "")])
