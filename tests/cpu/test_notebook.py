"""Every notebook runs top to bottom in a Jupyter kernel on the cpu backend (nbclient), its HTML
reprs are well-formed and draw the graph, and the notebooks are kept in git without outputs."""

import os
import pathlib

import pytest
from htmlcheck import check_html

# the test extra brings both; a machine without them (the GPU machine, which collects every file
# to select its gpu cases) skips this file rather than failing to collect it
nbformat = pytest.importorskip("nbformat")
NotebookClient = pytest.importorskip("nbclient").NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[2]
FOLDER = ROOT / "notebooks"
NOTEBOOKS = sorted(FOLDER.glob("*.ipynb"))


def test_there_are_notebooks_and_they_are_stored_without_outputs():
    assert {p.name for p in NOTEBOOKS} >= {"explore.ipynb", "porting-numpy.ipynb"}
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, (path.name, cell.id)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_on_cpu_and_its_html_is_well_formed(path, monkeypatch):
    monkeypatch.setenv("FUSEDARRAYS_BACKEND", "cpu")   # the kernel process reads it at start
    # the kernel runs in notebooks/: without the tree's root first on its path it would import
    # whichever fusedarrays is installed (an editable install of another checkout, say)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import fusedarrays\nprint(fusedarrays.__file__)"))
    # raises CellExecutionError, naming the cell, on any error (an assert in a cell included)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(FOLDER)}}).execute()
    imported = nb.cells.pop().outputs[0]["text"].strip()
    assert pathlib.Path(imported).resolve().is_relative_to(ROOT), imported
    htmls = [out["data"]["text/html"] for cell in nb.cells if cell.cell_type == "code"
             for out in cell.outputs if "text/html" in out.get("data", {})]
    assert htmls, path.name
    for text in htmls:
        check_html(text)
    assert any("<svg" in t and "pending fa.ndarray" in t for t in htmls), path.name
    assert any("fa.profile:" in t and "<svg" in t for t in htmls), path.name
