"""README.md's namespace coverage is the code's (tests/namespace_coverage.py generates it)."""

import namespace_coverage


def test_readme_coverage_is_generated_from_the_code():
    text = namespace_coverage.README.read_text()
    assert namespace_coverage.readme_section(text) == namespace_coverage.section(), (
        "README.md's coverage section is stale: python tests/namespace_coverage.py --write")


def test_every_left_out_ufunc_is_no_row():
    import numpy as np

    from fusedarrays.ir import ops

    for name in ops.LEFT_OUT:
        assert getattr(np, name) not in ops.BY_UFUNC, name
