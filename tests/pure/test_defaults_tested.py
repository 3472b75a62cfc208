"""The tests run the library at its default settings: a test that changes one says why.

Every ``config.override(...)`` in the tests that sets anything but ``BACKEND`` (which backend a
tier tests) or ``CACHE_DIR`` (a private folder, isolation rather than behaviour) carries a ``#``
comment on the statement's lines or the line above, giving the reason; the same for
``FUSEDARRAYS_*`` variables set in the tests' environment.
"""

import ast
import io
import pathlib
import tokenize

TESTS = pathlib.Path(__file__).resolve().parents[1]
FREE = {"BACKEND", "CACHE_DIR"}


def _comment_lines(source: str) -> set[int]:
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {tok.start[0] for tok in tokens if tok.type == tokenize.COMMENT}


def _overrides(tree: ast.AST):
    """``(first line, last line, names)`` of each override call and FUSEDARRAYS_ env setting."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name == "override":
            names = {k.arg for k in node.keywords if k.arg} | (
                {"**"} if any(k.arg is None for k in node.keywords) else set())
            yield node.lineno, node.end_lineno, names - FREE
        elif name in ("setenv", "setdefault", "__setitem__") and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and str(first.value).startswith("FUSEDARRAYS_"):
                setting = str(first.value).removeprefix("FUSEDARRAYS_")
                yield node.lineno, node.end_lineno, {setting} - FREE


def test_every_overridden_default_says_why():
    unexplained = []
    for path in sorted(TESTS.rglob("*.py")):
        source = path.read_text()
        comments = _comment_lines(source)
        for first, last, names in _overrides(ast.parse(source)):
            if names and not comments & set(range(first - 1, last + 1)):
                unexplained.append(f"{path.relative_to(TESTS)}:{first} sets {sorted(names)}")
    assert not unexplained, ("tests must run the defaults; say why beside each override:\n"
                             + "\n".join(unexplained))


def test_the_check_sees_an_unexplained_override():
    source = "with config.override(CPU_PARALLEL=False):\n    pass\n"
    (first, last, names), = _overrides(ast.parse(source))
    assert names == {"CPU_PARALLEL"} and not _comment_lines(source) & {first - 1, first}
    explained = "# serial: the reason\n" + source
    (first, last, names), = _overrides(ast.parse(explained))
    assert _comment_lines(explained) & set(range(first - 1, last + 1))
