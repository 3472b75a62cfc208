"""The benchmark scripts run: the harness's self-check and each script's ``--smoke`` on the cpu
backend, each in a child process, and the JSON each writes holds its rows with numbers in them."""

import json
import os
import pathlib
import subprocess
import sys

import pytest
from childenv import pythonpath

REPO = pathlib.Path(__file__).resolve().parents[2]


def run_script(name: str, tmp_path) -> dict:
    out = tmp_path / f"{name}.json"
    env = {**os.environ, "FUSEDARRAYS_BACKEND": "cpu", "PYTHONPATH": pythonpath(REPO)}
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / f"{name}.py"), "--smoke",
                           "--out", str(out)], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(out.read_text())


def numbers(record: dict) -> dict:
    rows = {r["figure"]: r for r in record["rows"]}
    for figure, row in rows.items():
        value = row["fusedarrays"]
        assert isinstance(value, (int, float)) and value == value and value >= 0, (figure, row)
        assert row["command"].startswith("python benchmarks/") and row["target"], row
    assert record["checks"] and all(c["ok"] for c in record["checks"]), record["checks"]
    assert record["commit"] and record["versions"]["numpy"] and record["backend"] == "cpu"
    return rows


def test_harness_self_check(tmp_path):
    rows = numbers(run_script("harness", tmp_path))
    assert rows["copy reference"]["peers"]["absent"].startswith("not installed")


def test_lazy_front_end_smoke(tmp_path):
    rows = numbers(run_script("lazy_front_end", tmp_path))
    figures = " | ".join(rows)
    for part in ("lazy Black-Scholes", "under fa.fuse", "launches per lazy Black-Scholes",
                 "(x + b[None,:])", "(x.T + b[None,:])", "out[...] =", "host µs per cached lazy",
                 "host µs per cached fa.fuse", "µs per op", "one more op"):
        assert part in figures, (part, figures)
    assert rows["launches per lazy Black-Scholes evaluation"]["fusedarrays"] == 1
    assert all(p.startswith("not measured") for r in rows.values() for p in r["peers"].values())


def test_fuse_figures_smoke(tmp_path):
    rows = numbers(run_script("fuse_figures", tmp_path))
    figures = " | ".join(rows)
    for part in ("Adam in place", "f.foreach", "clip-by-global-norm + Adam over 5 tensors",
                 "host µs per cached fa.fuse call"):
        assert part in figures, (part, figures)
    assert rows["launches per clip-by-global-norm + Adam step (f.foreach)"]["fusedarrays"] == 2


def test_reductions_smoke(tmp_path):
    rows = numbers(run_script("reductions", tmp_path))
    figures = " | ".join(rows)
    for part in ("((x - y)**2).sum()", "row softmax", "layer norm", "column sums",
                 "sum over axis 1", "relative error"):
        assert part in figures, (part, figures)
    assert rows[next(f for f in rows if f.startswith("((x - y)"))]["details"]["launches"] == 1


def test_random_export_smoke(tmp_path):
    rows = numbers(run_script("random_export", tmp_path))
    figures = " | ".join(rows)
    for part in ("rng.standard_normal", "dropout", "launches per noise-add",
                 "launches per dropout", "gather table[idx] * w", "launches per gather",
                 "x[mask].compute()"):
        assert part in figures, (part, figures)
    assert rows["launches per x[mask].compute()"]["fusedarrays"] == 4
    assert rows["launches per noise-add evaluation"]["fusedarrays"] == 1
    assert rows["launches per dropout evaluation"]["fusedarrays"] == 1
    assert rows["launches per gather evaluation"]["fusedarrays"] == 1


def test_sorting_smoke(tmp_path):
    rows = numbers(run_script("sorting", tmp_path))
    figures = " | ".join(rows)
    for part in ("fa.sort(x), 2^12", "fa.argsort(x), 2^12", "fa.sort(x, descending=True)",
                 "fa.argsort(x, descending=True)"):
        assert part in figures, (part, figures)
    assert all(p == "not measured" for r in rows.values() for p in r["peers"].values())


def test_copy_limit_rule(tmp_path, cpu_backend, monkeypatch):
    """A figure in copies beyond the physical limit, fusedarrays' or a peer's, is a failed check
    in the JSON and a string in the figure's place; a row marked cache_resident, a figure in
    another unit and a run without the limit (smoke, host backends) keep their numbers."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    import harness

    args = harness.arguments("rule").parse_args(["--smoke", "--commit", "test"])
    run = harness.Run("rule", args)
    assert run.copy_limit is None   # a smoke run on a host backend: nothing to hold figures to
    assert run.row("free", 5.0, unit=harness.COPY_UNIT)["fusedarrays"] == 5.0
    run.copy_limit, run.peers = harness.COPY_LIMIT, True
    assert 1.05 < harness.COPY_LIMIT <= 1.2
    row = run.row("sum, × copy", 2.03, unit=harness.COPY_UNIT, launches=1)
    row.peer("fast", lambda: 1.04).peer("impossible", lambda: 2.5).peer("absent", lambda: 1 / 0)
    assert row["fusedarrays"].startswith("failed check") and row["details"] == {"launches": 1}
    assert row["peers"]["fast"] == 1.04 and row["peers"]["absent"].startswith("failed: Zero")
    assert row["peers"]["impossible"].startswith("failed check"), row["peers"]
    at_limit = run.row("at the limit", harness.COPY_LIMIT, unit=harness.COPY_UNIT)
    assert at_limit["fusedarrays"] == harness.COPY_LIMIT
    l2 = run.row("column sums", 1.6, unit=harness.COPY_UNIT, cache_resident="64 MiB, ~L2")
    assert l2.peer("eager", lambda: 1.7)["fusedarrays"] == 1.6 and l2["peers"]["eager"] == 1.7
    assert l2["details"]["cache_resident"] == "64 MiB, ~L2"
    assert run.row("host µs", 900.0, unit="µs")["fusedarrays"] == 900.0
    failed = [c for c in run.checks if not c["ok"]]
    assert [(c["value"], c["limit"]) for c in failed] == [(2.03, harness.COPY_LIMIT),
                                                          (2.5, harness.COPY_LIMIT)], failed
    assert "fusedarrays" in failed[0]["name"] and "impossible" in failed[1]["name"]
    run.write(str(tmp_path / "rule.json"))
    written = json.loads((tmp_path / "rule.json").read_text())
    assert [c["ok"] for c in written["checks"]] == [False, False]
    assert run.finish() == 1   # a failed check fails the run


def test_cpu_smoke(tmp_path):
    rows = numbers(run_script("cpu", tmp_path))
    figures = " | ".join(rows)
    for part in ("a*b+c, 1e3", "a*b+c, 1e4", "10 ops with sqrt exp sin", "softmax, mask, cumsum",
                 "AdamW step over 5"):
        assert part in figures, (part, figures)
    for row in rows.values():
        assert row["unit"] == "× NumPy's speed" and row["details"]["numpy_us"] > 0, row
        assert all(p == "not measured" for p in row["peers"].values()), row


def test_optim_smoke(tmp_path):
    pytest.importorskip("torch")     # optional in CI: fusedarrays.optim's torch face
    rows = numbers(run_script("optim", tmp_path))
    figures = " | ".join(rows)
    for part in ("AdamW over 148 tensors", "LAMB over 200 tensors", "MLP training"):
        assert part in figures, (part, figures)
    assert rows[next(f for f in rows if f.startswith("AdamW over 148"))]["details"][
        "launches"] == 1
    assert rows[next(f for f in rows if f.startswith("LAMB"))]["details"]["launches"] == 3
