#!/usr/bin/env bash
# Runs the whole test suite in two passes and ends with one plain "N passed, N failed" line.
#
# Swift Testing runs every suite of a pass in parallel. The suites that start real servers
# (Google's Firestore emulator on Java, PostgreSQL, whole mwgated processes) run in a second
# pass, so their start-up does not starve the timing-sensitive simulator and serial tests on
# a 2-core machine.
set -uo pipefail
heavy='UplinkTests|DaemonTests'
total=0 failed=0 skipped=0 status=0
run_pass() {
    local log
    log=$(mktemp)
    swift test "$@" 2>&1 | tee "$log"
    local pass_status=${PIPESTATUS[0]}
    (( pass_status != 0 )) && status=$pass_status
    # Swift Testing prints "Test run with N tests ..." as its closing line.
    local summary count
    summary=$(grep -E 'Test run with [0-9]+ tests?' "$log" | tail -n 1)
    count=$(sed -nE 's/.*Test run with ([0-9]+) tests?.*/\1/p' <<<"$summary")
    if [ -z "$count" ]; then
        (( pass_status != 0 )) && failed=$((failed + 1))   # did not build or did not run
    else
        total=$((total + count))
    fi
    failed=$((failed + $(grep -E '^✘ Test .* failed after' "$log" | grep -vcE '^✘ Test run with' || true)))
    skipped=$((skipped + $(grep -cE '^[^ ]+ Test .*[")] skipped' "$log" || true)))
    summaries+=("$summary")
    rm -f "$log"
}
summaries=()
run_pass --skip "$heavy" "$@"
run_pass --filter "$heavy" "$@"
echo
echo "== summary =="
printf '%s\n' "${summaries[@]}"
echo "tests: $((total - failed - skipped)) passed, $failed failed, $skipped skipped"
exit "$status"
