#!/usr/bin/env bash
# Control API benchmark: wall time of `mwctl status --json` as a whole process (start to
# exit) against a whole gateway (two simulated boards) with the control server on a private
# bus, beside `busctl call` of the same method (GetStatus) in the same run. Median of RUNS.
# mwctl ships linked statically against the Swift runtime (`make mwctl-static`); this script
# builds that variant (cached in .build-static/) unless MWCTL_STATIC names one, and also
# times the dynamically linked $MWCTL from the release build for comparison.
# Usage: MWBENCH=... MWCTL=... bash scripts/bench/control.sh OUT.md
set -euo pipefail
out=${1:?usage: control.sh OUT.md}
mwbench=${MWBENCH:?MWBENCH must point to the release mwbench binary}
mwctl=${MWCTL:?MWCTL must point to the release mwctl binary}
runs=${CONTROL_BENCH_RUNS:-50}
if [ -z "${MWCTL_STATIC:-}" ]; then
    "$(dirname "$0")/../build-static.sh" mwctl >&2
    MWCTL_STATIC=.build-static/release/mwctl
fi

. "$(dirname "$0")/private-bus.sh"
private_bus_start
dir=$bus_dir
address=$bus_address

"$mwbench" control serve --address "$address" > "$dir/server.out" 2> "$dir/server.err" &
bench_track "$!"
for _ in $(seq 600); do grep -q ready "$dir/server.out" 2>/dev/null && break; sleep 0.05; done
grep -q ready "$dir/server.out" || { echo "control server did not start: $(cat "$dir/server.err")" >&2; exit 1; }
sleep 2  # let the boards connect so the status is a realistic one

cat > "$dir/time.py" <<'PY'
import os, statistics, subprocess, sys, time
address, mwctl, static, runs, csv_path = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address)
commands = {
    "static": [static, "status", "--json"],
    "mwctl": [mwctl, "status", "--json"],
    "busctl": ["busctl", f"--address={address}", "call", "io.mwgate.Gateway1", "/io/mwgate/Gateway1",
               "io.mwgate.Gateway1", "GetStatus"],
}
times = {name: [] for name in commands}
for name, command in commands.items():  # warm the page cache once
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
for _ in range(runs):  # interleaved, so load affects both alike
    for name, command in commands.items():
        start = time.perf_counter()
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        times[name].append((time.perf_counter() - start) * 1000)
with open(csv_path, "w") as csv:  # every run, for the report's latency histogram
    csv.write("client,ms\n")
    for name, values in times.items():
        csv.writelines(f"{name},{value:.3f}\n" for value in values)
for name, values in times.items():
    values.sort()
    print(f"{name} {statistics.median(values):.2f} {values[len(values) * 9 // 10]:.2f}")
PY
/usr/bin/python3 "$dir/time.py" "$address" "$mwctl" "$MWCTL_STATIC" "$runs" "${MWBENCH_DATA_DIR:-$(dirname "$out")}/control-latency.csv" > "$dir/result"
read -r _ ours ours90 < <(grep '^static' "$dir/result")
read -r _ dynamic dynamic90 < <(grep '^mwctl' "$dir/result")
read -r _ peer peer90 < <(grep '^busctl' "$dir/result")
ratio=$(awk -v a="$ours" -v b="$peer" 'BEGIN { printf "%.2f", a / b }')
dynamic_ratio=$(awk -v a="$dynamic" -v b="$peer" 'BEGIN { printf "%.2f", a / b }')
met=$(awk -v a="$ours" -v r="$ratio" 'BEGIN { print (a < 20 && r <= 2) ? "met" : "NOT met" }')
{
    echo "### Control API: \`mwctl status --json\` round trip"
    echo
    echo "Whole process, start to exit, against a gateway with two simulated boards on a private bus; median of $runs runs (interleaved)."
    echo
    echo "| Client | Median (ms) | p90 (ms) | Ratio to busctl |"
    echo "|---|---|---|---|"
    echo "| mwctl status --json (as shipped: static Swift runtime) | $ours | $ours90 | $ratio |"
    echo "| mwctl status --json (dynamic Swift runtime, plain release build) | $dynamic | $dynamic90 | $dynamic_ratio |"
    echo "| busctl call GetStatus (peer) | $peer | $peer90 | 1 |"
    echo
    echo "Goal: median under 20 ms and within 2x of busctl (shipped mwctl): **$met**."
    echo
} >> "$out"
echo "control: mwctl ${ours} ms (dynamic ${dynamic} ms), busctl ${peer} ms, ratio ${ratio} ($met)"
