"""tests/array_api/xfails.txt: every expected failure of the Array API suite has its reason."""

import pathlib

XFAILS = pathlib.Path(__file__).resolve().parents[1] / "array_api" / "xfails.txt"


def test_every_expected_failure_has_a_reason_above_it():
    lines = XFAILS.read_text().splitlines()
    ids = [(k, line) for k, line in enumerate(lines) if line.strip() and not line.startswith("#")]
    assert ids, "no expected failures listed"
    for k, line in ids:
        assert line.startswith("array_api_tests/") and line == line.strip(), line
        above = lines[k - 1]
        assert above.startswith("# ") and len(above) > 20, f"no reason above {line}"
    assert len({line for _, line in ids}) == len(ids), "an id is listed twice"
