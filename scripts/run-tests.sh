#!/usr/bin/env bash
# Runs the whole test suite and repeats the runner's summary lines at the end, so the
# result is the last thing a person (or CI) reads.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
swift test "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
echo
echo "== summary =="
grep -E '^(Test Suite .All tests.|Executed [0-9]+ tests|.*Test run with [0-9]+ tests)' "$log" | tail -n 4
exit "$status"
