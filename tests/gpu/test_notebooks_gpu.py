"""The notebooks run top to bottom on the GPU (cuda backend) in a Jupyter kernel, and say so."""

import pathlib

import pytest
from htmlcheck import check_html

nbformat = pytest.importorskip("nbformat")      # the test extra; a GPU image may lack them
NotebookClient = pytest.importorskip("nbclient").NotebookClient

FOLDER = pathlib.Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(FOLDER.glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_on_cuda(path, monkeypatch, tmp_path):
    monkeypatch.setenv("FUSEDARRAYS_BACKEND", "cuda")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(FOLDER)}}).execute()
    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    htmls = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    for text in htmls:
        check_html(text)
    assert any("cuda:0" in t and "fa.profile:" in t for t in htmls), path.name
    texts = "".join(o.get("data", {}).get("text/markdown", "") for o in outputs)
    assert "GPU" in texts and "cpu` backend" not in texts, texts[:500]
    # the executed copy, for a person to look at (kept out of the tree)
    nbformat.write(nb, tmp_path / path.name)
