#!/usr/bin/env bash
# Runs the whole test suite and ends with the runner's summary and one plain
# "N passed, N failed" line, so the result is the last thing a person (or CI) reads.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
swift test "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# Swift Testing (all our tests) prints "Test run with N tests ..." as its closing line;
# XCTest's empty "Executed 0 tests" summary is left out here on purpose.
summary=$(grep -E 'Test run with [0-9]+ tests?' "$log" | tail -n 1)
total=$(sed -E 's/.*Test run with ([0-9]+) tests?.*/\1/' <<<"$summary")
failed=$(grep -E '^✘ Test .* failed after' "$log" | grep -vcE '^✘ Test run with' || true)
skipped=$(grep -cE '^[^ ]+ Test .*[")] skipped' "$log" || true)
echo
echo "== summary =="
echo "$summary"
if [ -n "$total" ]; then
    echo "tests: $((total - failed - skipped)) passed, $failed failed, $skipped skipped"
elif [ "$status" -ne 0 ]; then
    echo "tests: 0 passed, 1 failed (the suite did not build or did not run)"
fi
exit "$status"
