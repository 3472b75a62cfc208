"""The exploration notebook runs top to bottom on the cpu backend (its code cells, in order)."""

import json
import pathlib

from fusedarrays import config

NOTEBOOK = pathlib.Path(__file__).resolve().parents[2] / "notebooks" / "explore.ipynb"


def test_notebook_cells_run():
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    namespace: dict = {}
    with config.override(BACKEND="cpu"):
        for source in code:
            exec(compile(source, str(NOTEBOOK), "exec"), namespace)
    assert namespace["result"].shape == (512, 256)
    assert bool(eval("np.allclose(z.get(), (x.get().T + s.get()[None, :]) * 2.0)", namespace))
    e = eval("np.exp(x.get() - x.get().max(axis=1, keepdims=True))", namespace)
    assert bool(eval("np.allclose(softmax, e / e.sum(axis=1, keepdims=True), atol=1e-6)",
                     dict(namespace, e=e)))
