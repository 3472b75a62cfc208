"""Pass rates per test file of an array-api-tests run (its ``--json-report`` file).

``python tests/array_api/pass_rates.py report.json`` prints, per file, the tests that passed,
failed, were expected to fail (tests/array_api/xfails.txt) or skipped (by the suite: disabled
extensions, newer versions' tests), and passed / (passed + failed + xfailed + xpassed); then the
rate over the target files: the eight issue 14's "Done when" names and, since the linalg extension
landed, test_linalg.py (issue 32, whose target is 97 %).
"""

from __future__ import annotations

import collections
import json
import sys

# the files whose tests must pass at >= 97 % together (issue 14: elementwise, creation,
# manipulation, statistical, searching, data-type, constants, array object; issue 32: linalg)
TARGET_FILES = ("test_operators_and_elementwise_functions.py", "test_creation_functions.py",
                "test_manipulation_functions.py", "test_statistical_functions.py",
                "test_searching_functions.py", "test_data_type_functions.py",
                "test_constants.py", "test_array_object.py", "test_linalg.py")
TARGET = 0.97


def rates(report: dict) -> dict[str, collections.Counter]:
    per_file: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for test in report["tests"]:
        per_file[test["nodeid"].split("::")[0]][test["outcome"]] += 1
    return per_file


def table(per_file: dict) -> str:
    lines = ["| file | passed | failed | xfailed | skipped | pass rate |",
             "|---|---|---|---|---|---|"]
    total = collections.Counter()
    for name, c in sorted(per_file.items()):
        total += c
        lines.append(_row(name.removeprefix("array_api_tests/"), c))
    lines.append(_row("**all**", total))
    return "\n".join(lines)


def target_line(per_file: dict) -> str:
    """The pass rate over :data:`TARGET_FILES` against :data:`TARGET`."""
    c = sum((per_file.get(f"array_api_tests/{name}", collections.Counter())
             for name in TARGET_FILES), collections.Counter())
    passed, ran = c["passed"], _ran(c)
    rate = passed / ran if ran else 0.0
    verdict = "met" if rate >= TARGET else "not met"
    return (f"The {len(TARGET_FILES)} target files (issue 14's eight and test_linalg.py): "
            f"{passed} of {ran} pass "
            f"({100 * rate:.1f} %; target {100 * TARGET:.0f} %: {verdict}).")


def _ran(c: collections.Counter) -> int:
    return c["passed"] + c["failed"] + c["xfailed"] + c["xpassed"]


def _row(name: str, c: collections.Counter) -> str:
    ran = _ran(c)
    rate = f"{100 * c['passed'] / ran:.1f} %" if ran else "—"
    return (f"| {name} | {c['passed']} | {c['failed']} | {c['xfailed']} | {c['skipped']} | "
            f"{rate} |")


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        per_file = rates(json.load(f))
    print(table(per_file))
    print()
    print(target_line(per_file))
