#!/usr/bin/env bash
# GNSS parser benchmark: our NMEA parser and assembler vs pynmea2 on the same input, same run.
# Usage: MWBENCH=path/to/mwbench bash scripts/bench/gnss.sh OUT.md
# Input: every `$` sentence of the captures in ../shared/testdata/nmea (CR removed),
# repeated to about 600,000 sentences, as in the reference's §4 measurement.
set -euo pipefail
out=${1:?usage: gnss.sh OUT.md}
root=$(cd "$(dirname "$0")/../.." && pwd)
mwbench=${MWBENCH:-$root/.build/release/mwbench}
data="$root/../shared/testdata/nmea"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat "$data"/*.log | tr -d '\r' | grep -a '^\$' > "$work/once.nmea"
per=$(wc -l < "$work/once.nmea")
sentences=${GNSS_BENCH_SENTENCES:-600000}
repeat=$(( (sentences + per - 1) / per ))
for _ in $(seq "$repeat"); do cat "$work/once.nmea"; done > "$work/mixed.nmea"
total=$(wc -l < "$work/mixed.nmea")

venv="$root/.build-venv/gnss"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet pynmea2
fi
pyver=$("$venv/bin/python" -c 'import pynmea2; print(pynmea2.version)')

ours=$("$mwbench" gnss --input "$work/mixed.nmea" --runs 5)
get() { echo "$ours" | sed -n "s/^$1=//p"; }
parser=$(get parser_sentences_per_second)
assembler=$(get assembler_sentences_per_second)
fixes=$(get fixes)

peer=$("$venv/bin/python" - "$work/mixed.nmea" <<'PY'
import sys, time, statistics, pynmea2
lines = open(sys.argv[1], encoding="ascii", errors="replace").read().splitlines()
def parse_only():
    ok = 0
    for line in lines:
        try:
            pynmea2.parse(line, check=True); ok += 1
        except Exception:
            pass
    return ok
def parse_access():
    ok = 0
    for line in lines:
        try:
            m = pynmea2.parse(line, check=True); ok += 1
            t = m.sentence_type
            if t in ("RMC", "GGA", "GLL"):
                m.timestamp; m.latitude; m.longitude
                if t == "RMC": m.datestamp; m.spd_over_grnd
                if t == "GGA": m.altitude; m.gps_qual; m.horizontal_dil
        except Exception:
            pass
    return ok
for name, fn in (("parse", parse_only), ("access", parse_access)):
    rates = []
    for _ in range(3):
        start = time.perf_counter(); fn(); rates.append(len(lines) / (time.perf_counter() - start))
    print(f"{name}={int(statistics.median(rates))}")
PY
)
pparse=$(echo "$peer" | sed -n 's/^parse=//p')
paccess=$(echo "$peer" | sed -n 's/^access=//p')

ratio=$(awk -v a="$parser" -v b="$pparse" 'BEGIN { printf "%.1f", a / b }')
ratio_access=$(awk -v a="$parser" -v b="$paccess" 'BEGIN { printf "%.1f", a / b }')
ratio_asm=$(awk -v a="$assembler" -v b="$pparse" 'BEGIN { printf "%.1f", a / b }')
fmt() { echo "$1" | rev | sed 's/[0-9]\{3\}/&,/g' | rev | sed 's/^,//'; }
goal30=$(awk -v r="$ratio" 'BEGIN { print (r >= 30) ? "met" : "NOT met" }')
goalc=$(awk -v p="$parser" 'BEGIN { print (p >= 1500000) ? "met" : "NOT met" }')

cat > "$out" <<MD
### GNSS: NMEA parsing (sentences per second, one core, median)

Input: $(fmt "$total") sentences ($(fmt "$per") real sentences from ../shared/testdata/nmea, repeated $repeat times; mixed GSV/GSA/RMC/GGA/VTG/GLL/ZDA/TXT/proprietary). Same file, same run.

| what | mwgate (Swift, release) | pynmea2 $pyver (CPython) | ratio |
| --- | ---: | ---: | ---: |
| parse (frame + checksum + typed fields) vs pynmea2 parse only | $(fmt "$parser") | $(fmt "$pparse") | ${ratio}x |
| parse vs pynmea2 parse + RMC/GGA/GLL field access | $(fmt "$parser") | $(fmt "$paccess") | ${ratio_access}x |
| full assembler (bytes -> $(fmt "$fixes") fixes) vs pynmea2 parse only | $(fmt "$assembler") | $(fmt "$pparse") | ${ratio_asm}x |

Goal: at least 30x pynmea2 (parse vs parse): **$goal30** (${ratio}x). Goal: on par with the fastest C parsers, about 1,500,000 mixed sentences/s per core (minmea, reference §4, measured on this VM class, not in this run): **$goalc** ($(fmt "$parser")/s).
MD
cat "$out"
