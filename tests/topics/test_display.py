"""Reprs: NumPy's summarised values, the HTML table and graph SVG, never a compile or a launch (on
cpu); on sim values read without a launch and a profile of the simulated CUDA kernel, which has
no copy bandwidth to compare with (arrays small)."""



import html
import re

import numpy as np
import pytest
from htmlcheck import check_html

import fusedarrays as fa
from fusedarrays.api import graphsvg
from fusedarrays.ir import graph, walks

SEED = 1601


def rand(shape, seed=SEED, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _counts():
    s = fa.stats()
    return s["compiles"], s["launches"]


# Shapes for every schedule (flat, rows, tiled, nd) and for NumPy's summary (> 1000 elements),
# each read through views with positive and negative steps.
VIEWS = [
    ((1500,), lambda a: a, "flat summarised"),
    ((1500,), lambda a: a[::-3], "flat negative step"),
    ((40, 37), lambda a: a, "rows summarised"),
    ((40, 37), lambda a: a.T, "transposed"),
    ((40, 37), lambda a: a[::-2, 5::3], "negative and positive steps"),
    ((6, 9, 30), lambda a: a[:, ::-1, 1:], "nd summarised"),
    ((3, 4), lambda a: a[::-1], "small, every value"),
    ((0, 5), lambda a: a, "empty"),
]


@pytest.mark.parametrize("shape, view, what", VIEWS, ids=[v[2] for v in VIEWS])
def test_text_repr_of_a_computed_array_is_numpys_summary_without_a_launch(shape, view, what):
    host = rand(shape)
    a = view(fa.asarray(host))
    before = _counts()
    text = repr(a)
    html_text = a._repr_html_()
    assert _counts() == before, f"repr launched or compiled ({what}, seed {SEED})"
    want = np.array2string(view(host), separator=", ", prefix="fa.ndarray(")
    assert text.startswith(f"fa.ndarray({want}, dtype=float32"), (what, SEED, text[:400])
    assert ("..." in text) == (view(host).size > 1000), what
    check_html(html_text)


def test_float16_and_int_values_are_numpys():
    rng = np.random.default_rng(SEED)
    for host in (rng.standard_normal((50, 30)).astype(np.float16),
                 rng.integers(-5000, 5000, (2000,), dtype=np.int64)):
        want = np.array2string(host[::-1], separator=", ", prefix="fa.ndarray(")
        assert repr(fa.asarray(host)[::-1]).startswith(f"fa.ndarray({want}"), (host.dtype, SEED)


def test_repr_of_a_pending_array_names_the_graph_and_runs_nothing():
    x, b = fa.asarray(rand((300, 200))), fa.asarray(rand(200, SEED + 1))
    y = fa.sqrt(x * x + 1.0) * (x.T[::-1].T + b[None, :])
    before = _counts()
    text, html_text = repr(y), y._repr_html_()
    assert _counts() == before and y.pending
    assert text.startswith("fa.ndarray(pending multiply(sqrt(add(multiply(buffer"), text
    tags = check_html(html_text)
    assert "svg" in tags and "table" in tags
    # leaves say which is a broadcast (its shape) and which a view read out of order
    assert re.search(r">buffer\d+ f32 1×200<", html_text) and " f32 view<" in html_text
    assert "pending" in html_text and "(300, 200)" in html_text and "1 fused kernel" in html_text
    assert "not in this process" in html_text
    hx = rand((300, 200))   # and it still computes what it says
    want = np.sqrt(hx * hx + 1) * (hx[:, ::-1] + rand(200, SEED + 1)[None, :])
    np.testing.assert_allclose(y.get(), want, rtol=1e-5, err_msg=f"seed {SEED}")
    again = fa.sqrt(x * x + 1.0) * (x.T[::-1].T + b[None, :])
    assert "yes, in this process" in again._repr_html_()


def test_every_node_kind_draws_reductions_draws_and_gathers_included():
    """Graphs with a reduction (softmax, a layer norm), a random draw and a gather draw in the
    HTML repr, each kind in its own colour, without a compile or a launch."""
    x = fa.asarray(rand((30, 40)))
    idx = fa.asarray(np.array([3, 0, 3, 39]))
    rng = fa.random.default_rng(SEED)
    norm = (x - x.mean(axis=-1, keepdims=True)) / fa.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)
    cases = {"reduce": fa.softmax(x), "random": x + 0.1 * rng.standard_normal((30, 40)),
             "gather": fa.take(x, idx, axis=1) * 2.0, "cast": x.astype(np.float64) + 1.0}
    cases["reduce, whole"] = x.sum()
    cases["layer norm"] = norm
    before = _counts()
    for what, y in cases.items():
        html_text = y._repr_html_()
        assert "svg" in check_html(html_text), what
        kind = what.split(",")[0] if what != "layer norm" else "reduce"
        assert graphsvg._COLOURS[kind][1] in html_text, what
    assert _counts() == before
    kinds = {n.kind for y in cases.values() for n in walks.walk([y._node])}
    assert kinds <= set(graphsvg._COLOURS), kinds


def test_the_html_repr_counts_the_kernels_a_reduction_takes():
    x = fa.asarray(rand((2048, 1024)))
    before = _counts()
    for y, want in ((fa.softmax(x), "1 fused kernel, 1 launch"),   # one kernel, row by row
                    (x.sum(), "1 fused kernel, 1 launch"),         # in parts, folded after
                    (x - x.sum(axis=0), "2 kernels, 2 launches")):  # and the subtraction after
        assert f"<td>{want}</td>" in y._repr_html_()
        assert fa.explain(y).launches == int(want[0])
    assert _counts() == before


def test_explain_html_of_a_graph_with_reductions_in_the_backends_words():
    """Each kernel of a program: what it does, how it walks on this backend, operands, key
    parts, source; on cpu no GPU words (blocks, SMs, grids) for what runs on the CPU."""
    x = fa.asarray(rand((256, 300)))
    for y, n in ((fa.softmax(x), 1), (x - x.sum(axis=0), 2)):
        ex = fa.explain(y)
        html_text = ex._repr_html_()
        tags = check_html(html_text)
        assert ex.launches == n and tags.count("details") == 2 * n and "table" in tags
        for plan, _ in ex.kernels:
            assert f"{plan.name}</h4>" in html_text
        assert "walk (cpu)" in html_text and "spread over the cores" in html_text
        assert "block per" not in html_text and "grid" not in html_text, html_text
        assert "def " in html.unescape(re.sub("<[^>]+>", "", html_text))
        assert "block per" not in str(ex) and "walk (cpu)" in str(ex)
    rows = fa.explain(fa.softmax(x))._repr_html_()
    assert "the row&#x27;s max: one value per row" in rows    # a temporary says what it holds


def test_html_escapes_markup_in_labels():
    x = fa.asarray(rand(8))
    node = graph.op("<script>alert(1)</script>", (x._node,), (x.dtype, x.dtype))
    y = fa.ndarray(node)
    html_text = y._repr_html_()
    assert "<script>" not in html_text and "&lt;script&gt;" in html_text
    check_html(html_text)
    assert "<script>" not in fa.explain(x + 1)._repr_html_()


def _boxes(svg: str) -> int:
    return len(re.findall(r"<rect ", svg))


def test_a_500_node_graph_collapses_to_a_readable_picture():
    """A chain (deep) and a sum of many products (wide, with repeated parts): each draws as a few
    dozen boxes, the rest named in collapsed boxes with their node counts."""
    xs = [fa.asarray(rand(64, SEED + k)) for k in range(6)]
    deep = xs[0]
    for k in range(122):    # a new constant per step: equal ones would be one node
        deep = fa.sin(deep) * (0.5 + k / 1024) + xs[k % 6]
    wide = xs[0] * xs[1]
    for k in range(124):
        wide = wide + xs[k % 6] * (k + 1.0) - xs[(k + 1) % 6]
    for y in (deep, wide):
        assert y.pending and graph.count_nodes(y._node) >= 480
        before = _counts()
        svg = graphsvg.graph_svg(y._node)
        html_text = y._repr_html_()
        assert _counts() == before
        check_html(html_text)
        assert 5 <= _boxes(svg) <= 45, _boxes(svg)
        assert re.search(r"… \d+ nodes", svg), svg[:300]


def test_every_node_kind_draws():
    # a pending reduction, gather, draw or scan: each kind has its box (a KeyError once)
    x = fa.asarray(rand((4, 30)))
    arrays = [x.sum(axis=1) + 1, fa.take(x, fa.asarray(np.array([0, 2])), axis=0) * 2,
              fa.random.default_rng(SEED).random((4, 30), dtype=np.float32) + x,
              fa.cumulative_sum(x, axis=1, include_initial=True) - 1]
    for y in arrays:
        before = _counts()
        html_text = y._repr_html_()
        assert _counts() == before
        check_html(html_text)


def test_shared_nodes_are_drawn_once_and_repeated_parts_merge():
    x, y = fa.asarray(rand(16)), fa.asarray(rand(16, SEED + 1))
    s = x * y
    z = s + fa.sin(s)           # s has two users: one box, two edges
    svg = graphsvg.graph_svg(z._node)
    assert svg.count(">multiply</text>") == 1 and svg.count("<path ") == 5
    leaves = [fa.asarray(rand(16, SEED + k)) for k in range(8)]
    terms = [leaves[k] * leaves[k + 1] + 1.0 for k in range(0, 8, 2)]
    total = (terms[0] + terms[1]) * (terms[2] + terms[3])
    small = graphsvg.graph_svg(total._node, max_boxes=3)   # a small budget: to see collapsing
    # the four equal terms under the two drawn adds: one collapsed box, an edge from each add
    assert small.count("add … 5 nodes ×4") == 1 and small.count("<path ") == 4, small


def test_explain_html_shows_schedule_layouts_key_parts_and_highlighted_source():
    x, s = fa.asarray(rand((130, 70))), fa.asarray(rand(130, SEED + 1))
    z = (x.T + s[None, :]) * 2.0          # a transposed operand: the tiled schedule
    before = _counts()
    ex = fa.explain(z)
    text, html_text = str(ex), ex._repr_html_()
    assert _counts() == before and z.pending
    assert ex.plan.schedule == "tiled" and "schedule tiled" in text
    check_html(html_text)
    assert "shared-memory tiles" in html_text and "transposed" in html_text
    assert "key parts (" in html_text and html.escape(ex.why) in html_text
    assert "<span" in html_text and "def</span>" in html_text   # Pygments is in the test env
    assert "runs no kernel" in str(fa.explain(x)) and "runs no kernel" not in text
    np.testing.assert_allclose(z.get(), (rand((130, 70)).T + rand(130, SEED + 1)[None, :]) * 2,
                               rtol=1e-6, err_msg=f"seed {SEED}")


def test_explain_html_of_a_fused_function():
    @fa.fuse
    def scale(p, g, lr):
        p -= lr * g

    p, g = fa.asarray(rand(64)), fa.asarray(rand(64, SEED + 1))
    scale(p, g, 0.5)
    np.testing.assert_allclose(p.get(), rand(64) - 0.5 * rand(64, SEED + 1), rtol=1e-6)
    html_text = fa.explain(scale)._repr_html_()
    check_html(html_text)
    assert "fa.fuse" in html_text and "signature 0" in html_text and "<span" in html_text


def test_a_summarised_view_copies_only_about_the_elements_it_shows(monkeypatch):
    host = rand((2000, 1500))
    x = fa.asarray(host)
    backend = next(iter(x._node.buffers)).backend
    fetched = []
    real = backend.to_host
    monkeypatch.setattr(backend, "to_host", lambda s, dt, n, off: fetched.append(n) or real(
        s, dt, n, off))
    for view, hv in ((x.T[::-1], host.T[::-1]), (x[::3, ::-5], host[::3, ::-5]), (x, host)):
        fetched.clear()
        want = np.array2string(hv, separator=", ", prefix="fa.ndarray(")
        assert repr(view).startswith(f"fa.ndarray({want}"), SEED
        # 7 x 7 shown elements (6 and a filler per axis), in runs a few hundred apart at most
        assert fetched and sum(fetched) <= 49 * 257 and len(fetched) <= 49, fetched


def test_reprs_inside_a_fused_function_show_the_trace_and_run_nothing():
    shown = []

    @fa.fuse
    def step(p, g):
        q = p * 2.0 + g
        shown.extend([p._repr_html_(), q._repr_html_()])
        p[...] = q

    p, g = fa.asarray(rand(32)), fa.asarray(rand(32, SEED + 1))
    step(p, g)
    np.testing.assert_allclose(p.get(), rand(32) * 2 + rand(32, SEED + 1), rtol=1e-6)
    for text in shown:
        check_html(text)
    assert "traced argument" in shown[0] and "<svg" in shown[1] and "pending" in shown[1]


# sim

SIM_SEED = 1609


@pytest.mark.tiers("sim")
def test_reprs_and_a_profile_on_the_simulator():
    host = np.random.default_rng(SIM_SEED).standard_normal((40, 30)).astype(np.float32)
    x = fa.asarray(host)
    before = fa.stats()
    for view, hv in ((x, host), (x[::-1, ::7], host[::-1, ::7])):
        want = np.array2string(hv, separator=", ", prefix="fa.ndarray(")
        assert repr(view).startswith(f"fa.ndarray({want}, dtype=float32"), SIM_SEED
        check_html(view._repr_html_())
    y = x[:4, :8] * 2.0 + 1.0
    check_html(y._repr_html_())
    assert fa.stats()["launches"] == before["launches"] and y.pending
    with fa.profile() as p:
        got = y.get()
    np.testing.assert_allclose(got, host[:4, :8] * 2 + 1, rtol=1e-6, err_msg=f"seed {SIM_SEED}")
    (row,) = p.kernels()
    assert row["launches"] == 1 and row["elements"] == 32 and row["device_s"] > 0
    assert p.copy_bandwidth == {"sim": None} and row["of_copy"] is None
    assert "of copy" in str(p) and check_html(p._repr_html_())
