#!/usr/bin/env bash
# Real-BlueZ benchmark (issue 18 part 3, the VM half) -> Markdown section in $1. Called by
# scripts/bench.sh with MWBENCH set. Boots the real-BlueZ VM (docs/bluez-vm.md) once with the
# release mwgated/mwctl/mwsim beside MWBENCH and runs its `bench` group (scripts/vm/scenario.py
# group_bench): one board (mwsim --peripheral behind Debian's bluetoothd 5.66) streaming 100 Hz,
# mwgated's CPU per 1,000 samples while recording, LINK_DROPS (20) link drops with the time from
# link back to streaming and the samples lost against the time the link was down, then bleak
# (PyPI, inside the VM) receiving the same stream with AcquireNotify and with StartNotify. First,
# before the session: the ATT notifications the board sends in IDLE_SECONDS (60) with no session
# recording (btmon on its adapter; issue 19 part 2: 0). BENCH_NOTIFICATIONS=kept-session runs
# mwgated with `[boards] notifications = "kept-session"` (default: acquire). BENCH_BACKFILL=1 runs it
# with `[boards] backfill = true` (the board logs to flash, each drop's gap is filled from the log:
# the loss per drop is then what the documents still miss). MWGATE_VM_BTMON=1 adds
# an HCI trace and, from it, where each reconnect's time went on the air (the ATT requests);
# BENCH_BUS_TRACE=1 the bus trace and, from it, each reconnect's calls and signals.
# Needs root (the VM cache and qemu's 9p shares) and what make deps installs.
set -euo pipefail
out=${1:?usage: bluez.sh OUT.md}
bench=${MWBENCH:?MWBENCH must point at the release mwbench binary}
bin=$(dirname "$bench")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
results=${MWGATE_VM_RESULTS:-$root/.build/bluez-vm-bench}

if [ "$(id -u)" -ne 0 ]; then
    echo "bluez.sh: not root: the VM cache (debootstrap) and qemu's 9p shares need root" >&2
    exit 1
fi
for tool in mwgated mwctl mwsim; do
    [[ -x "$bin/$tool" ]] || { echo "bluez.sh: $bin/$tool missing (swift build -c release)" >&2; exit 1; }
done
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
status=0
# The group reports the per-drop losses last, after bleak's two runs: at host loads of 10-17 the
# whole group took longer than run-vm.sh's default 600 s and that report was cut off (three runs
# on 2026-11-27).
export MWGATE_VM_TIMEOUT=${MWGATE_VM_TIMEOUT:-1200}
MWGATE_BIN=$bin MWGATE_VM_RESULTS=$results "$root/scripts/vm/test-bluez.py" bench | tee "$results.log" || status=$?
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
metrics=$results/bench/results/metrics.json
[[ -s "$metrics" ]] || { echo "bluez.sh: the VM produced no metrics ($metrics); see $results/bench/results" >&2; exit 1; }

metric() { python3 -c 'import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m["name"] == sys.argv[2]:
        print(m["value"])' "$metrics" "$1" | tail -1; }
verdict() { grep -F "$1" "$results.log" | grep -oE '^  (PASS|FAIL)' | tr -d ' ' | tail -1; }
goal() { case $(verdict "$1") in PASS) echo met ;; FAIL) echo "NOT met" ;; *) echo "not measured" ;; esac; }
detail() { grep -F "$1" "$results.log" | sed -E 's/^  (PASS|FAIL) bench: [^:]*: //' | tail -1; }
drops=${LINK_DROPS:-20}
if [[ ${MWGATE_VM_DB_HASH:-0} != 0 ]]; then
    db_hash="served (MWGATE_VM_DB_HASH=1), so on a reconnect the gateway's bluetoothd reads it and skips discovery"
else
    db_hash="none, as on a MetaWear (its SoftDevice serves none), so on every reconnect the gateway's bluetoothd discovers the primary services again before it hands out the notification socket (MWGATE_VM_DB_HASH=1 serves one)"
fi
{
    echo "### Real BlueZ in a VM: mwgated beside bleak, link drops"
    echo
    echo "Debian bookworm's kernel and bluetoothd 5.66 in qemu (TCG, 2 vCPUs, no KVM) on this machine; one MetaMotion R as \`mwsim --peripheral hci1\` (the board model behind bluetoothd's GattManager1, notifications through bluetoothd's AcquireNotify socket) streaming gyro at 100 Hz; release mwgated as the \`mwgate\` user on hci0, recording a session into the directory sink. bluetoothd serves both ends of every link, and everything shares the VM's two emulated CPUs, so the CPU figures are TCG-inflated: compare them with each other, not with the mwsim figures above. bluetoothd's main.conf beyond the VM's own settings (MWGATE_VM_MAIN_CONF): ${MWGATE_VM_MAIN_CONF:-none}; the board's Database Hash: $db_hash. Host load $load_before before, $load_after after."
    echo
    echo "| measure | value |"
    echo "|---|---:|"
    echo "| mwgated's notification path (\`[boards] notifications\`, BENCH_NOTIFICATIONS) | $(metric "mwgated notification path") |"
    echo "| flash-log backfill (\`[boards] backfill\`, BENCH_BACKFILL) | $(metric "backfill") |"
    echo "| samples backfilled from the log over the drops (status) | $(metric "samples backfilled (status)") |"
    echo "| mwgated CPU per 1,000 samples over the drops and after (streamed + backfilled) | $(metric "mwgated CPU ms per 1000 samples (the drops and after, streamed + backfilled)") ms |"
    echo "| the VM's two CPUs busy while measured | $(metric "VM CPUs busy while measured, %") % |"
    echo "| mwgated CPU per 1,000 samples while recording (the path above) | $(metric "mwgated CPU ms per 1000 samples (recording, AcquireNotify)") ms |"
    echo "| mwgated CPU per 1,000 samples while recording, after the link drops | $(metric "mwgated CPU ms per 1000 samples (recording, after the drops)") ms |"
    echo "| bluetoothd CPU per 1,000 samples, same window (both ends of the link) | $(metric "bluetoothd CPU ms per 1000 samples (both ends of the link)") ms |"
    echo "| dbus-daemon CPU per 1,000 samples, same window (routes a signal per notification on StartNotify) | $(metric "dbus-daemon CPU ms per 1000 samples") ms |"
    echo "| bleak CPU per 1,000 notifications, AcquireNotify | $(metric "bleak CPU ms per 1000 notifications (AcquireNotify)") ms |"
    echo "| bleak CPU per 1,000 notifications, StartNotify | $(metric "bleak CPU ms per 1000 notifications (StartNotify)") ms |"
    echo "| link down per drop (board's side), median | $(metric "link down per drop, median s") s |"
    echo "| link back -> streaming, median / worst | $(metric "link back -> streaming, median s") / $(metric "link back -> streaming, worst s") s |"
    echo "| samples lost per link drop, median | $(metric "samples lost per link drop, median") |"
    echo "| link up -> notifications on (board's side), median / worst | $(metric "link up -> notifications on (board's side), median s") / $(metric "link up -> notifications on (board's side), worst s") s |"
    echo
    echo "| goal | verdict | measured |"
    echo "|---|---|---|"
    echo "| $drops connects after link drops, 0 needing an operator | $(goal "every reconnect without an operator") | $(detail "every reconnect without an operator") |"
    echo "| streaming again <= 1 s after the link is back | $(goal "streaming within 1 s of the link coming back") | $(detail "streaming within 1 s of the link coming back") |"
    echo "| first recorded sample taken <= 1 s after the link is back (board's clock) | $(goal "first recorded sample taken within 1 s") | $(detail "first recorded sample taken within 1 s") |"
    echo "| samples lost per drop <= link down time + 100 ms | $(goal "samples lost per link drop") | $(detail "samples lost per link drop") |"
    echo "| documents: no duplicates, reordering or changed values | $(goal "documents without duplicates") | $(detail "documents without duplicates") |"
    echo "| notifications per minute while no session records (issue 19; before: 6,000 a board, streaming) = 0 | $(goal "no notification while no session records") | $(detail "no notification while no session records") |"
    echo
    echo "Per link drop (the board's side: bluetoothd's Connected there, and the gateway's CCCD write as the board saw it; a board sends nothing between the link coming back and that write; lost: the samples missing in the documents around the drop, at 100 Hz):"
    echo
    echo "| drop | link down s | link up -> notifications on s | link up -> first sample s (status) | link up -> first recorded sample taken s (board's clock) | lost s | lost - down s | lost samples the board had sent |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
    python3 - "$metrics" <<'PY'
import json, sys
rows = [m["value"] for m in map(json.loads, open(sys.argv[1])) if m["name"] == "per drop"]
def cell(value):
    return "?" if value is None else str(value)
for r in (rows[-1] if rows else []):
    over = None if r["lost s"] is None or r["down s"] is None else round(r["lost s"] - r["down s"], 2)
    print("| " + " | ".join(cell(v) for v in (r["drop"], r["down s"], r["link up -> notifications on s"],
                                               r["link up -> first sample s"],
                                               r.get("link up -> first recorded sample taken s"), r["lost s"], over,
                                               r.get("sent, not delivered"))) + " |")
PY
    bus_trace=$results/bench/results/bench-bus.log
    if [[ -s "$bus_trace" ]]; then
        echo
        echo "Each reconnect on the gateway's bus (BENCH_BUS_TRACE=1: bluetoothd's signals and mwgated's calls, scripts/vm/bus_timeline.py; seconds from bluetoothd's answer to \`Connect\`). mwgated calls AcquireNotify on the GATT objects bluetoothd kept as soon as \`Connect\` returns; bluetoothd answers it once its GATT client is ready (\`ServicesResolved\`), so only a call after \`ServicesResolved\` leaves time of ours between the link and the first sample (\"ours after ServicesResolved\"). The last four columns come from the board's log and the status on the same clock: the link up and the CCCD written as the board's side saw them, the first sample's arrival in mwgated (the status's \`lastSampleAt\`, polled every 0.1 s), and from the socket to that sample (the board's next notification crossing bluetoothd; of mwgated's only the read):"
        echo
        python3 "$root/scripts/vm/bus_timeline.py" "$bus_trace" "$metrics" || echo "(the bus trace could not be read)"
    fi
    trace=$results/bench/results/hci.btsnoop
    if [[ -s "$trace" ]]; then
        echo
        echo "Where each reconnect's time went on the air (MWGATE_VM_BTMON=1: btmon's trace of the gateway's controller, scripts/vm/att_timeline.py; seconds from the LE connection complete). bluetoothd hands out a board's AcquireNotify socket only when its GATT client is ready, after the requests it sends one at a time on every new link; the board sends nothing until its notify CCCD is written. The peer answering: the VM's board (bluetoothd's GATT server on hci1 with mwsim --peripheral's application behind it, sharing the VM's CPUs); the gaps: the gateway's bluetoothd before its next request:"
        echo
        python3 "$root/scripts/vm/att_timeline.py" --table "$trace" || echo "(the trace could not be read)"
    fi
    echo
    echo "<details><summary>raw</summary>"
    echo
    sed 's/^/    /' "$metrics"
    echo
    echo "</details>"
} > "$out"
exit "$status"
