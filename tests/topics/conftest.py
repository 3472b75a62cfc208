"""The tiers a topic's cases run on, as a parameter: each test in ``tests/topics`` runs once per
tier named by its ``tiers`` marker (function, class or module ``pytestmark``; cpu alone where
none is named), and the autouse ``tier`` fixture sets that tier up and yields its name.

- ``cpu``: the cpu backend at its defaults.
- ``sim``: the CUDA kernel source in numba's simulator (slow: a topic keeps its sim cases tiny),
  with a shorter GIL switch interval (``tests/sim/conftest.py`` says why).
- ``cuda``: the GPU; marked ``gpu`` (``python -m pytest -m gpu`` selects it) and skipped where
  no CUDA device is visible, as every test in ``tests/gpu``.
- ``ptx``: PTX for sm_90 without a GPU (``fa.explain(..., arch="sm_90")``): arrays on the cpu
  backend, skipped where numba-cuda's compiler cannot be imported.
"""

import sys

import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.cuda.backend import CudaBackend

HAVE_GPU = CudaBackend.available()
SWITCH_INTERVAL = 0.001   # the sim tier's, for the same reason (tests/sim/conftest.py)

TIERS = ("cpu", "sim", "cuda", "ptx")
BACKEND = {"cpu": "cpu", "sim": "sim", "cuda": "cuda", "ptx": "cpu"}


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "tiers(*names): the tiers (cpu, sim, cuda, ptx) a tests/topics case runs on")


def _names(argnames) -> list:
    return [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) else argnames


def pytest_generate_tests(metafunc):
    """Parametrise ``tier`` by the ``tiers`` marker, unless the test names its own pairs (a
    ``parametrize("tier, dtype", [...], indirect=["tier"])`` where each tier takes its own
    values)."""
    if "tier" not in metafunc.fixturenames:
        return
    if any("tier" in _names(m.args[0]) for m in metafunc.definition.iter_markers("parametrize")):
        return
    marker = metafunc.definition.get_closest_marker("tiers")
    names = marker.args if marker else ("cpu",)
    unknown = set(names) - set(TIERS)
    assert not unknown, f"{metafunc.definition.nodeid}: unknown tiers {sorted(unknown)}"
    metafunc.parametrize("tier", [pytest.param(n, id=n) for n in names], indirect=True)


@pytest.hookimpl(tryfirst=True)   # before ``-m`` deselects by marks
def pytest_collection_modifyitems(items):
    """The cuda tier's cases are marked ``gpu`` and skipped without a device, as tests/gpu's."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("tier") == "cuda":
            item.add_marker(pytest.mark.gpu)
            if not HAVE_GPU:
                item.add_marker(pytest.mark.skip(reason="no CUDA device visible"))


@pytest.fixture(autouse=True)
def tier(request):
    name = request.param
    if name == "ptx":
        pytest.importorskip("numba.cuda")
    before = sys.getswitchinterval()
    if name == "sim":
        sys.setswitchinterval(min(before, SWITCH_INTERVAL))
    try:
        with config.override(BACKEND=BACKEND[name]):
            assert fa.backend() == BACKEND[name], f"tier {name} runs on {fa.backend()}"
            yield name
    finally:
        sys.setswitchinterval(before)
