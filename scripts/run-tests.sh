#!/usr/bin/env bash
# Runs the whole test suite in six passes and ends with one plain "N passed, N failed" line.
#
# Swift Testing runs every suite of a pass in parallel. The suites that start real servers
# (Google's Firestore emulator on Java, PostgreSQL, whole mwgated processes) run in a second
# pass, so their start-up does not starve the timing-sensitive simulator and serial tests on
# a 2-core machine. The last pass runs the real-BlueZ scenarios in a qemu VM (scripts/vm/,
# docs/bluez-vm.md) with release binaries of mwgated, mwctl and mwsim, which it builds (the
# debug ones are too slow under the VM's TCG); MWGATE_BLUEZ_VM=0 leaves it out,
# MWGATE_BLUEZ_VM=only runs it alone (no Swift passes), and a machine that cannot run it (no
# root, no qemu) says why in the summary and counts it as skipped, never as passed.
set -uo pipefail
heavy='UplinkTests|DaemonTests'
# Suites whose stop must beat its own limits (a bluetoothd answering late, the stop's 700 ms
# for its commands) run last and alone: beside ninety other suites on 2 cores a 1.5 s stop was
# measured at 2.4 s. They assert what the stop did, not how long it took (the 2 s of a SIGTERM
# is measured in the real-BlueZ VM's stop group, docs/bluez-vm.md). The stop
# after the connect race (UnannouncedLinkStopTests) holds to no wall-clock promise and runs in
# the first pass: its failure there ("timed out waiting for the link closed", session 16) was
# the stop's own events driving the reconnection mid-stop, not the load (BlueZBoardTransport.stop).
bounded='BoundedStopTests'
# The Firestore fault test was reported hung in 2 of 5 runs beside the other server suites: the
# output stopped at its "commit of 1 document(s) got no answer" and never went on. That may be
# `swift test` holding back the test binary's output: in an UplinkTests|DaemonTests pass the
# output stopped at exactly that line for 8 min, yet once the binary was killed the held-back
# rest showed the fault test had passed 3 s later; the test still running was PostgreSQL's
# records test (both its eventually checks failed). The fault test passed 10 of 10 alone at load
# 8-12. It stays alone until a full run shows which test really hangs.
alone='FirestoreEmulatorTests'
# Suites that run system tools (systemd-analyze, systemd-sysusers, unshare, journald) wait for
# them synchronously, each holding one of the cooperative pool's threads, of which a 2-core
# machine has two: beside the first pass they starved it for about 30 s, long enough for the
# in-memory board-session tests to time out waiting for a stream. They run in a pass of their own,
# with the package suites (dpkg-deb, lintian, systemd-analyze on the package): beside the server
# suites, those three synchronous tests held both threads for minutes, and in-memory sync tests
# waited 105 s for a turn and failed; and headless Chromium's screenshot of a session page.
tools='ServiceSupportTests|DaemonTests.PackageTests|DaemonTests.PackageLicenceTests|BufferTests.SessionPictureBrowserTests'
# Deterministic suites that keep a CPU busy for seconds to a minute (exhaustive float checks,
# fuzzers, seeded recording and flash-log simulations, the kill -9 loop and its fixture, session
# pictures) run in a pass of their own, before the rest: beside them the first pass's tests that
# wait on a wall clock (a serial receiver's fixes, simulated boards' streams) got no turn on the
# cooperative pool for 30 s and failed in CI, and no pure test finished in that time.
compute='BasicsTests.ShortestDecimalTests|FuzzTests|RecordingTests|GatewayTests.FlashLogPageSafetyTests|BufferTests.CrashTests|BufferTests.SessionPictureTests'
total=0 failed=0 skipped=0 status=0
# A pass that outlives this (seconds) is stopped and counted as failed, naming the tests it was
# still running, so a hang costs CI minutes and a diagnosis instead of its whole time limit.
pass_limit=${MWGATE_PASS_LIMIT:-900}
pass_number=0
run_pass() {
    local log started=$SECONDS
    log=$(mktemp)
    pass_number=$((pass_number + 1))
    echo "== pass $pass_number ($*) started at $(date -u +%T) UTC, ${SECONDS} s into the run"
    # stdbuf: the test binary's output goes to a pipe, where it was held back 4 KiB at a time,
    # so a pass stopped from outside lost the lines saying where it stood.
    timeout --kill-after=30 "$pass_limit" stdbuf -oL -eL swift test "$@" 2>&1 | tee "$log"
    local pass_status=${PIPESTATUS[0]}
    (( pass_status != 0 )) && status=$pass_status
    if (( pass_status == 124 || pass_status == 137 )); then
        local unfinished
        unfinished=$(unfinished_tests "$log")
        echo "== pass $pass_number stopped after ${pass_limit} s; tests still running:"
        printf '%s\n' "${unfinished:-  (none named)}"
        failed=$((failed + 1))
        summaries+=("pass $pass_number ($*): STOPPED after ${pass_limit} s; still running: $(tr '\n' ';' <<<"$unfinished")")
        rm -f "$log"
        return
    fi
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
    echo "== pass $pass_number took $((SECONDS - started)) s"
    rm -f "$log"
}
# The tests a log shows as started and not yet passed or failed, one a line.
unfinished_tests() {
    python3 - "$1" <<'PY'
import re, sys
started, ended = [], set()
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    m = re.match(r"^\S+ Test (.+) started\.$", line.rstrip("\n"))
    # "Test run started." is the pass itself; a parameterised test's cases end with it.
    if m and m.group(1) != "run" and not m.group(1).startswith("case passing "):
        started.append(m.group(1))
        continue
    m = re.match(r"^\S+ Test (.+?)( with \d+ test cases?)? (passed|failed|skipped)", line)
    if m:
        ended.add(m.group(1))
for name in started:
    if name not in ended:
        print("  " + name)
PY
}
run_bluez_vm() {
    local log started=$SECONDS
    log=$(mktemp)
    echo "== real-BlueZ VM pass started at $(date -u +%T) UTC, ${SECONDS} s into the run"
    # The VM's root file system (debootstrap: mostly downloads and dpkg) is built beside the
    # release build, which keeps both cores busy; test-bluez.py then finds it up to date.
    local cache_log cache_pid bin
    cache_log=$(mktemp)
    scripts/vm/build-cache.sh >"$cache_log" 2>&1 &
    cache_pid=$!
    if ! bin=$(scripts/vm/build-release.sh "$@"); then
        wait "$cache_pid"
        rm -f "$log" "$cache_log"
        status=1 total=$((total + 1)) failed=$((failed + 1))
        summaries+=("real-BlueZ VM: FAILED: the release build of mwgated, mwctl, mwsim failed (above)")
        return
    fi
    wait "$cache_pid"
    echo "== VM cache built beside it: $(tail -n 2 "$cache_log" | head -n 1)"
    rm -f "$cache_log"
    MWGATE_BIN=$bin scripts/vm/test-bluez.py 2>&1 | tee "$log"
    local vm_status=${PIPESTATUS[0]}
    (( vm_status != 0 )) && status=$vm_status
    local line vm_passed vm_failed
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    vm_passed=$(sed -nE 's/^([0-9]+) passed.*/\1/p' <<<"$line")
    vm_failed=$(sed -nE 's/.* ([0-9]+) failed$/\1/p' <<<"$line")
    if [ -z "$line" ]; then
        vm_passed=0 vm_failed=1
    fi
    total=$((total + vm_passed + vm_failed))
    failed=$((failed + vm_failed))
    summaries+=("real-BlueZ VM: ${line:-no verdict}")
    echo "== real-BlueZ VM pass took $((SECONDS - started)) s"
    rm -f "$log"
}
# Why the VM pass cannot run here (empty: it can).
bluez_vm_unavailable() {
    [ "$(id -u)" -eq 0 ] || { echo "not root (debootstrap builds its cache and qemu's 9p shares write as root; run make test as root)"; return; }
    local tool
    for tool in qemu-system-x86_64 debootstrap mkfs.ext4 cpio readelf; do
        command -v "$tool" >/dev/null 2>&1 || { echo "$tool missing (make deps installs it)"; return; }
    done
}
summaries=()
if [ "${MWGATE_BLUEZ_VM:-1}" != only ]; then
    run_pass --filter "$compute" "$@"
    run_pass --skip "$heavy|$bounded|$tools|$compute" "$@"
    run_pass --filter "$tools" "$@"
    run_pass --filter "$heavy" --skip "$alone|$tools" "$@"
    run_pass --filter "$bounded" "$@"
    run_pass --filter "$alone" "$@"
fi
if [ "${MWGATE_BLUEZ_VM:-1}" = 0 ]; then
    summaries+=("real-BlueZ VM: SKIPPED (MWGATE_BLUEZ_VM=0)")
    skipped=$((skipped + 1)) total=$((total + 1))
elif reason=$(bluez_vm_unavailable) && [ -n "$reason" ]; then
    echo "real-BlueZ VM: SKIPPED: $reason" >&2
    summaries+=("real-BlueZ VM: SKIPPED: $reason")
    skipped=$((skipped + 1)) total=$((total + 1))
else
    run_bluez_vm "$@"
fi
echo
echo "== summary =="
printf '%s\n' "${summaries[@]}"
echo "the whole run took ${SECONDS} s"
echo "tests: $((total - failed - skipped)) passed, $failed failed, $skipped skipped"
exit "$status"
