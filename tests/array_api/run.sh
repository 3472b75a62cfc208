#!/usr/bin/env bash
# The Array API test suite (data-apis/array-api-tests) against fusedarrays on the cpu backend.
# Not run by CI: a full run takes many minutes on two cores. See README.md beside this file.
#
#   tests/array_api/run.sh                       # every file, 50 examples per test
#   tests/array_api/run.sh array_api_tests/test_creation_functions.py   # one file
#   MAX_EXAMPLES=5 tests/array_api/run.sh        # a quick look
#
# ARRAY_API_TESTS_DIR: a checkout of the suite with its array-api submodule (cloned there at
# the pinned commit if absent; default ~/.cache/fusedarrays/array-api-tests).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
# Pinned: the last commit before the suite started requiring complex dtypes at import
# (its PR #430 added dtype_helpers.widest_complex_dtype, max() of an empty list without them).
COMMIT=cf7bc9f6b4955230262d189bb0fb1d634f534620
SUITE="${ARRAY_API_TESTS_DIR:-$HOME/.cache/fusedarrays/array-api-tests}"
if [ ! -d "$SUITE/array_api_tests" ]; then
    git clone https://github.com/data-apis/array-api-tests "$SUITE"
    git -C "$SUITE" checkout "$COMMIT"
    git -C "$SUITE" submodule update --init
fi
python -c "import hypothesis, ndindex, pytest_jsonreport" 2>/dev/null || \
    python -m pip install pytest hypothesis ndindex pytest-json-report
REPORT="${REPORT:-$ROOT/tests/array_api/report.json}"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export ARRAY_API_TESTS_MODULE=fusedarrays
export ARRAY_API_TESTS_VERSION=2023.12

export FUSEDARRAYS_BACKEND=cpu
# numba's LLVM optimisation level: no effect on results, halves compile time of the many
# small kernels the suite's random shapes and dtypes need (as tests/conftest.py does)
export NUMBA_OPT="${NUMBA_OPT:-0}"
cd "$SUITE"
status=0
python -m pytest "${@:-array_api_tests/}" -q -p no:cacheprovider \
    --max-examples="${MAX_EXAMPLES:-50}" --disable-deadline --disable-extension linalg fft \
    --xfails-file "$HERE/xfails.txt" --json-report --json-report-file="$REPORT" || status=$?
python "$HERE/pass_rates.py" "$REPORT"
exit $status
