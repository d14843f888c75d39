#!/usr/bin/env bash
# MetaWear notification decode throughput (single vs packed gyro) -> Markdown section in $1.
# Called by scripts/bench.sh with MWBENCH set to the release mwbench binary.
set -euo pipefail
out=${1:?usage: metawear.sh OUT.md}
bench=${MWBENCH:?MWBENCH must point at the release mwbench binary}
raw=$("$bench" metawear "${@:2}")
value() { printf '%s\n' "$raw" | sed -n "s/^$1=//p"; }
single=$(value single_samples_per_s)
single_ns=$(value single_ns_per_sample)
packed=$(value packed_samples_per_s)
packed_ns=$(value packed_ns_per_sample)
goal=$(value goal_samples_per_s)
met() { awk -v a="$1" -v g="$goal" 'BEGIN { print (a >= g) ? "met" : "NOT met" }'; }
{
    echo "### MetaWear notification decoding"
    echo
    echo "Decoding gyro notifications (BMI160, ±1000 °/s) to °/s with \`NotificationDecoder\`,"
    echo "one core, 1024 distinct pre-built notifications cycled."
    echo
    echo "| case | ours (samples/s) | ours (ns/sample) | peer (samples/s) | ratio |"
    echo "|---|---:|---:|---:|---:|"
    echo "| single-sample gyro (8 B) | $single | $single_ns | n/a | n/a |"
    echo "| packed gyro (20 B, 3 samples) | $packed | $packed_ns | n/a | n/a |"
    echo
    echo "No peer in this pass: MbientLab's decoder lives inside the C++ SDK (MetaWear-SDK-Cpp)"
    echo "behind its BLE plumbing and is not packaged for Debian, so there is no like-for-like"
    echo "decode-only figure from the same run."
    echo
    echo "Goal: ≥ $goal samples/s per core for both cases (a board streams at most a few hundred"
    echo "samples/s): single $(met "$single"), packed $(met "$packed")."
    echo
    echo "<details><summary>raw</summary>"
    echo
    printf '%s\n' "$raw" | sed 's/^/    /'
    echo
    echo "</details>"
} > "$out"
