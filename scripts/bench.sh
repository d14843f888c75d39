#!/usr/bin/env bash
# `make bench`: runs every area's benchmark (scripts/bench/<area>.sh) on a release build, one
# after the other, and writes one report: docs/benchmarks.md with the machine it ran on (CPU,
# cores, RAM, load average, date, Swift version), each area's section (our figure, the peer's
# from the same run, the ratio, the goal) and SVG plots in docs/benchmarks/.
#
#   scripts/bench.sh [OUT_DIR]          full run (areas' raw output and data in OUT_DIR,
#                                       default bench-results/)
#   BENCH_QUICK=1 scripts/bench.sh      every area briefly, to check the pipeline; the report
#                                       goes to OUT_DIR/benchmarks.md, docs/ stays untouched
#   BENCH_AREAS="control footprint"     only these areas; the report goes to OUT_DIR/benchmarks.md
#   BENCH_REPORT=path.md                where the report goes
#   BENCH_NO_BUILD=1                    use the release binaries already built
#
# Builds what it measures: the release tree (.build/) and, as the Debian package ships them,
# mwgated and mwctl with the Swift runtime linked statically (.build-static/).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${1:-bench-results}
mkdir -p "$out"
out=$(cd "$out" && pwd)
quick=${BENCH_QUICK:-0}
[[ "$quick" = 0 ]] && quick=""
# Only a full run replaces docs/benchmarks.md: a quick run or a run of some areas (which would
# leave the report with those areas only) writes beside its raw output unless told otherwise.
if [[ -n "$quick" || -n "${BENCH_AREAS:-}" ]]; then
    report=${BENCH_REPORT:-$out/benchmarks.md}
else
    report=${BENCH_REPORT:-$root/docs/benchmarks.md}
fi
# Each area writes OUT_DIR/<area>.md and .log, and this run first removes OUT_DIR's *.md, *.csv
# and *.txt: a report among them would be deleted or overwritten by an area's own output.
report_dir=$(mkdir -p "$(dirname "$report")" && cd "$(dirname "$report")" && pwd)
report_name=$(basename "$report")
if [[ "$report_dir" = "$out" && "$report_name" != benchmarks.md ]] && [[ "$report_name" =~ \.(md|csv|txt|log)$ ]]; then
    echo "bench: BENCH_REPORT=$report is inside the results folder $out, where each area writes its raw" \
        "output (<area>.md, <area>.log) and a run first removes *.md, *.csv, *.txt; name a report outside it," \
        "or $out/benchmarks.md" >&2
    exit 2
fi
plots_dir=$(dirname "$report")/benchmarks
mkdir -p "$plots_dir"
areas=${BENCH_AREAS:-dbus boards metawear backfill gnss recording uplink control footprint instructions endurance bluez}

# The machine, before anything of ours loads it.
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
cores=$(nproc)
ram=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
swift_version=$(swift --version 2>/dev/null | head -1)
kernel=$(uname -sr)
distro=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME" || echo unknown)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain 2>/dev/null | grep -qv '^??' && echo " (with uncommitted changes)" || true)

echo "== build: release tree, and mwgated/mwctl as packaged (static Swift runtime)"
# BENCH_NO_BUILD=1: measure the binaries already built (checking the pipeline itself).
[[ -n "${BENCH_NO_BUILD:-}" ]] || swift build -c release
bin=$(swift build -c release --show-bin-path)
export MWBENCH=$bin/mwbench MWCTL=$bin/mwctl MWSIM=$bin/mwsim
# MWGATED_STATIC and MWCTL_STATIC, both set, name prebuilt binaries instead (e.g. from dist/).
if [[ -z "${MWGATED_STATIC:-}" || -z "${MWCTL_STATIC:-}" ]]; then
    scripts/build-static.sh mwgated mwctl
    export MWCTL_STATIC=$root/.build-static/release/mwctl MWGATED_STATIC=$root/.build-static/release/mwgated
fi
for binary in "$MWGATED_STATIC" "$MWCTL_STATIC"; do
    [[ -x "$binary" ]] || { echo "bench: $binary missing" >&2; exit 1; }
done
static_note=$(file -b "$MWGATED_STATIC" | grep -q 'dynamically linked' && ldd "$MWGATED_STATIC" | grep -q libswiftCore \
    && echo "NOT as packaged: this run's mwgated/mwctl link the Swift runtime dynamically ($MWGATED_STATIC)" || true)
export MWBENCH_DATA_DIR=$out
if [[ -n "$quick" ]]; then
    # Small sizes everywhere: checks that each area runs end to end, not how fast.
    export DBUS_BENCH_CALLS=${DBUS_BENCH_CALLS:-2000} DBUS_BENCH_SIGNALS=${DBUS_BENCH_SIGNALS:-5000}
    export BOARDS_BENCH_SECONDS=${BOARDS_BENCH_SECONDS:-3}
    export GNSS_BENCH_SENTENCES=${GNSS_BENCH_SENTENCES:-60000}
    export SEAL_ROUNDS=${SEAL_ROUNDS:-1}
    export CHUNKS=${CHUNKS:-40}
    export CONTROL_BENCH_RUNS=${CONTROL_BENCH_RUNS:-5}
    export FOOTPRINT_SECONDS=${FOOTPRINT_SECONDS:-12} FOOTPRINT_STEADY_AFTER=${FOOTPRINT_STEADY_AFTER:-5}
    export FOOTPRINT_STARTS=${FOOTPRINT_STARTS:-3}
    export INSTRUCTIONS_SECONDS=${INSTRUCTIONS_SECONDS:-5}
    export ENDURANCE_IDLE_SECONDS=${ENDURANCE_IDLE_SECONDS:-10} ENDURANCE_SESSION_SECONDS=${ENDURANCE_SESSION_SECONDS:-10}
    export LINK_DROPS=${LINK_DROPS:-5} BENCH_SECONDS=${BENCH_SECONDS:-10}
    export BACKFILL_DAEMON_SECONDS=${BACKFILL_DAEMON_SECONDS:-6}
fi

rm -f "$out"/*.md "$out"/*.csv "$out"/*.txt
failed=()
declare -A seconds_taken
for area in $areas; do
    script=scripts/bench/$area.sh
    [[ -f "$script" ]] || { echo "bench: no $script" >&2; failed+=("$area"); continue; }
    echo "== bench: $area (load $(cut -d' ' -f1-3 /proc/loadavg))"
    t0=$SECONDS
    if bash "$script" "$out/$area.md" > "$out/$area.log" 2>&1; then
        seconds_taken[$area]=$((SECONDS - t0))
        tail -n 3 "$out/$area.log"
    else
        seconds_taken[$area]=$((SECONDS - t0))
        echo "bench: $area failed; last lines of $out/$area.log:" >&2
        tail -n 20 "$out/$area.log" >&2
        failed+=("$area")
    fi
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

echo "== plots"
/usr/bin/python3 scripts/bench/plots.py "$out" "$plots_dir" > "$out/plots.md" || { echo "bench: plots failed" >&2; failed+=(plots); }

plot_link() {  # the Markdown for one plot, if it was drawn
    local name=$1 caption=$2
    [[ -f "$plots_dir/$name.svg" ]] || return 0
    local rel
    rel=$(/usr/bin/python3 -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' "$plots_dir/$name.svg" "$(dirname "$report")")
    printf '![%s](%s)\n\n' "$caption" "$rel"
}

{
    echo "# mwgate benchmarks"
    echo
    echo "Written by \`make bench\`$([[ -n "$quick" ]] && echo ' in quick mode (BENCH_QUICK=1: small sizes, figures not meaningful)') (scripts/bench.sh). Every peer figure comes from the same run on the same machine; each section names its goal and whether this run met it."
    echo
    echo "## Machine"
    echo
    echo "| | |"
    echo "|---|---|"
    echo "| date (UTC) | $started |"
    echo "| CPU | $cpu_model |"
    echo "| cores | $cores |"
    echo "| RAM | $ram |"
    echo "| load average (1/5/15 min) at the start | $load_start |"
    echo "| load average at the end | $load_end |"
    echo "| OS | $distro, $kernel |"
    echo "| Swift | $swift_version |"
    echo "| mwgate commit | $commit$dirty |"
    [[ -n "$static_note" ]] && echo "| mwgated / mwctl | **$static_note** |"
    echo
    echo "A load average above the core count at the start means other work shared the CPU: timings of such a run are pessimistic and noisy."
    echo
    echo "## Summary"
    echo
    echo "| area | goal lines | run time |"
    echo "|---|---|---:|"
    for area in $areas; do
        if [[ -f "$out/$area.md" ]] && ! printf '%s\n' "${failed[@]+"${failed[@]}"}" | grep -qx "$area"; then
            verdicts=$(awk '/[Gg]oal/ { g = 1 } /^$/ { g = 0 } g || /\| (met|NOT met) \|/' "$out/$area.md" | grep -oE '\b(NOT met|met)\b' | sort | uniq -c | awk '{ printf "%s%d %s", (NR > 1 ? ", " : ""), $1, $2 (NF > 2 ? " " $3 : "") }' || true)
            echo "| [$area](#$area) | ${verdicts:-no goal} | ${seconds_taken[$area]} s |"
        else
            echo "| $area | **failed** (see $out/$area.log) | ${seconds_taken[$area]:-0} s |"
        fi
    done
    echo
    for area in $areas; do
        echo "<a id=\"$area\"></a>"
        echo
        if [[ -f "$out/$area.md" ]]; then
            # Each area writes a ### section; one level up in this document.
            sed 's/^### /## /' "$out/$area.md"
            echo
        else
            echo "## $area"
            echo
            echo "Failed in this run; see the log."
            echo
        fi
        case $area in
        control) plot_link control-latency "mwctl status --json and busctl call: round-trip time histogram" ;;
        uplink)
            plot_link uplink-drain "Backlog drain over time: documents stored, ours and the plain client" ;;
        footprint)
            plot_link footprint-rss "mwgated RSS over time with 4 boards streaming" ;;
        esac
    done
    if [[ -s "$out/plots.md" ]]; then
        echo "## Notes on the plots"
        echo
        cat "$out/plots.md"
    fi
} > "$report"
echo "report: $report"
if ((${#failed[@]})); then
    echo "bench: failed: ${failed[*]}" >&2
    exit 1
fi
