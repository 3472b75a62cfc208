"""SciPy's array API mode for a client's cases: ``SCIPY_ARRAY_API=1`` is read once, when SciPy is
first imported, and changes SciPy's functions for the whole process (``scipy.special.erf``
becomes a Python wrapper instead of the ufunc that tests/cpu's ``fa.special`` tests call). So the
cases of SciPy and of scikit-learn (which refuses ``array_api_dispatch`` without it) run in a
child pytest started with it, as a user of either must start Python; the child's report is this
test's failure text.

Run a case file alone, in this process, with::

    SCIPY_ARRAY_API=1 python -m pytest tests/clients/scipy_cases.py
"""

import os
import subprocess
import sys
from pathlib import Path

import childenv

HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parents[1]


def run_cases(*filenames: str) -> None:
    """Run ``tests/clients/<filename>`` files in one child pytest with ``SCIPY_ARRAY_API=1``;
    fail with its report unless all their tests pass (xfails and skips count as passing)."""
    env = dict(os.environ, SCIPY_ARRAY_API="1", PYTHONPATH=childenv.pythonpath(REPOSITORY))
    command = [sys.executable, "-m", "pytest", *(str(HERE / f) for f in filenames), "-q",
               "-rfEsxX", "--tb=short", "-p", "no:cacheprovider", "-p", "no:xdist"]
    done = subprocess.run(command, cwd=REPOSITORY, env=env, capture_output=True, text=True,
                          timeout=480)
    report = done.stdout + done.stderr
    print(report)    # pytest shows it with -s, or as the captured output of a failure
    assert done.returncode == 0, f"{' '.join(filenames)} in a child with SCIPY_ARRAY_API=1 " \
                                 f"(exit {done.returncode}):\n{report[-6000:]}"
