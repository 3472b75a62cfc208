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
# Pinned: the suite's head of 2026-04-03 (its PR #435), which tests API versions up to 2025.12
# (2024.12 here) and has test_dlpack.py. (The earlier pin, cf7bc9f, predated PR #430, whose
# max() over the complex dtypes at import needed a library with complex dtypes: fusedarrays has
# them since.)
COMMIT=55fcc60179efa2680ddd6cd926ddf17b83530e2b
SUITE="${ARRAY_API_TESTS_DIR:-$HOME/.cache/fusedarrays/array-api-tests}"
# Where to clone from: GitHub, or local mirrors on a machine without network access (the
# submodule's URL is then set to ARRAY_API_URL before it is cloned).
TESTS_URL="${ARRAY_API_TESTS_URL:-https://github.com/data-apis/array-api-tests}"
SPEC_URL="${ARRAY_API_URL:-https://github.com/data-apis/array-api}"
if [ ! -d "$SUITE/array_api_tests" ]; then
    git clone "$TESTS_URL" "$SUITE"
    git -C "$SUITE" checkout "$COMMIT"
    git -C "$SUITE" submodule init
    git -C "$SUITE" config submodule.array_api_tests/array-api.url "$SPEC_URL"
    git -C "$SUITE" -c protocol.file.allow=always submodule update
fi
if [ "$(git -C "$SUITE" rev-parse HEAD)" != "$COMMIT" ]; then
    echo "run.sh: $SUITE is not at the pinned commit $COMMIT; check it out (and its" \
         "submodule: git submodule update) or remove the folder" >&2
    exit 2
fi
python -c "import hypothesis, ndindex, pytest_jsonreport" 2>/dev/null || \
    python -m pip install pytest hypothesis ndindex pytest-json-report
REPORT="${REPORT:-$ROOT/tests/array_api/report.json}"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export ARRAY_API_TESTS_MODULE=fusedarrays
export ARRAY_API_TESTS_VERSION=2024.12

export FUSEDARRAYS_BACKEND=cpu
# numba's LLVM optimisation level: no effect on results, halves compile time of the many
# small kernels the suite's random shapes and dtypes need (as tests/conftest.py does)
export NUMBA_OPT="${NUMBA_OPT:-0}"
cd "$SUITE"
rm -f "$REPORT"     # a run that stops before writing one must not print the last run's rates
status=0
python -m pytest "${@:-array_api_tests/}" -q -p no:cacheprovider \
    --max-examples="${MAX_EXAMPLES:-50}" --disable-deadline --disable-extension fft \
    --xfails-file "$HERE/xfails.txt" --json-report --json-report-file="$REPORT" || status=$?
[ -f "$REPORT" ] && python "$HERE/pass_rates.py" "$REPORT"
exit $status
