"""Pass rates per test file of an array-api-tests run (its ``--json-report`` file).

``python tests/array_api/pass_rates.py report.json`` prints, per file, the tests that passed,
failed, were expected to fail (tests/array_api/xfails.txt) or skipped (by the suite: complex
dtypes, disabled extensions), and passed / (passed + failed + xfailed).
"""

from __future__ import annotations

import collections
import json
import sys


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


def _row(name: str, c: collections.Counter) -> str:
    ran = c["passed"] + c["failed"] + c["xfailed"] + c["xpassed"]
    rate = f"{100 * c['passed'] / ran:.1f} %" if ran else "—"
    return (f"| {name} | {c['passed']} | {c['failed']} | {c['xfailed']} | {c['skipped']} | "
            f"{rate} |")


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        print(table(rates(json.load(f))))
