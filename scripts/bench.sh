#!/usr/bin/env bash
# Runs every area's benchmark script (scripts/bench/*.sh) against the release build and
# gathers their Markdown sections into one report.
set -euo pipefail
out=${1:-bench-results}
mkdir -p "$out"
bin=$(swift build -c release --show-bin-path)
report="$out/report.md"
{
    echo "# mwgate benchmarks"
    echo
    echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "- machine: $(uname -m), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "- swift: $(swift --version 2>/dev/null | head -1)"
    echo
} > "$report"
status=0
for script in scripts/bench/*.sh; do
    area=$(basename "$script" .sh)
    echo "== bench: $area"
    if MWBENCH="$bin/mwbench" MWCTL="$bin/mwctl" bash "$script" "$out/$area.md"; then
        cat "$out/$area.md" >> "$report"
        echo >> "$report"
    else
        echo "bench: $area failed" >&2
        status=1
    fi
done
echo "report: $report"
cat "$report"
exit "$status"
