#!/usr/bin/env bash
# Uplink benchmark -> Markdown section in $1: drain a one-hour backlog of 4 boards at 100 Hz
# (720 chunks + the records document) into Google's Firestore emulator and into PostgreSQL 15
# with mwgate's sync service, beside plain clients (python3-requests, python3-psycopg2)
# sending the same bodies/rows in the same run. Servers are started here on loopback and
# stopped on exit. CHUNKS overrides the chunk count.
set -euo pipefail
out=${1:?usage: uplink.sh OUT.md}
bench=${MWBENCH:?MWBENCH must point at the release mwbench binary}
chunks=${CHUNKS:-720}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/mwgate-uplink-bench.XXXXXX)
chmod 755 "$work"
emu_pid=""
. "$here/scratch-postgres.sh"
cleanup() {
    stop_emulator
    scratch_postgres_stop
    rm -rf "$work"
}
trap cleanup EXIT

launcher=/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud_firestore_emulator
fs_note=""
have_fs=""
# The emulator keeps every document in its JVM heap, deleted ones too: DELETE .../documents
# empties a project for readers but frees no memory (a full GC after deleting two drains still
# held 5.3 GB), so each drain adds ~3.3 GB of live heap. With two rounds in one emulator the
# heap filled (default max = 1/4 of RAM), G1 fell into back-to-back 12 s full GCs and a
# commit got no answer for 120 s. So every measured drain gets an emulator of its own, with
# a fixed heap (no resizing in the middle of a drain) large enough for one drain, warmed up
# the same way before ours and before the peer.
# The emulator's ~1 s stalls were its young-generation GC pauses (-Xlog:gc against the drain's
# per-commit timeline: 101 pauses, 18 s of a 68 s drain, the time above the median commit
# matching the time inside pauses), and a third of their cost was the kernel's, not the
# JVM's: first-touch page faults (GC sys 9.3 s of 23 s) as evacuation copied into heap
# pages never used before. With the heap touched at start (AlwaysPreTouch) on transparent
# huge pages, the same drain took 42 s with 7 s of pauses (GC sys 0.1 s) and its slowest
# commit 0.6 s instead of 1.2 s. ParallelGC was worse (longer pauses). The options are the
# fixture's, the same for ours and the peer's drain; EMULATOR_JVM_OPTIONS overrides them.
ram_mb=$(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo)
emu_heap_mb=$(( ram_mb * 2 / 5 < 8192 ? ram_mb * 2 / 5 : 8192 ))
warmup_commits=${UPLINK_WARMUP_COMMITS:-40}
emu_jvm_options=${EMULATOR_JVM_OPTIONS:--XX:+AlwaysPreTouch -XX:+UseTransparentHugePages}
emu_port=""
start_emulator() {
    stop_emulator
    emu_port=$(free_port)
    JAVA_TOOL_OPTIONS="-Xms${emu_heap_mb}m -Xmx${emu_heap_mb}m $emu_jvm_options" setsid "$launcher" start --host=127.0.0.1 --port="$emu_port" \
        --project_id=bench-default >> "$work/emulator.log" 2>&1 &
    emu_pid=$!
    for _ in $(seq 240); do curl -s -o /dev/null "http://127.0.0.1:$emu_port/" && return 0; sleep 0.5; done
    echo "uplink: the Firestore emulator did not start (see $work/emulator.log)" >&2
    return 1
}
stop_emulator() {
    [ -n "$emu_pid" ] || return 0
    kill -TERM -- "-$emu_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$emu_pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL -- "-$emu_pid" 2>/dev/null || true
    wait "$emu_pid" 2>/dev/null || true
    # The launcher exits first; its JVM may still be dying, and the kernel tearing down its
    # pre-touched heap (GBs) takes a core for a while. Wait for the whole process group, so
    # that the PostgreSQL drain after it does not share the CPU with that teardown.
    for _ in $(seq 300); do pgrep -g "$emu_pid" > /dev/null || break; sleep 0.1; done
    emu_pid=""
}
commit_url() { echo "http://127.0.0.1:$emu_port/v1/projects/$1/databases/(default)/documents:commit"; }
# A fresh emulator, its JIT warmed by the first commits of the drain into a project of their
# own (not measured, same client and bodies for both sides), then emptied.
fresh_emulator() {
    start_emulator
    /usr/bin/python3 "$here/uplink_peer.py" warmup "$(commit_url bench-warmup)" "$fs_bodies" "$warmup_commits"
    curl -s -o /dev/null -X DELETE "http://127.0.0.1:$emu_port/emulator/v1/projects/bench-warmup/databases/(default)/documents"
}
sinks=${UPLINK_SINKS:-firestore postgresql}  # e.g. UPLINK_SINKS=postgresql for a short rerun
if [[ " $sinks " != *" firestore "* ]]; then
    fs_note="Firestore not run (UPLINK_SINKS=$sinks)."
elif [ -x "$launcher" ] && command -v java >/dev/null; then
    have_fs=1
    if (( emu_heap_mb < 5000 )); then
        fs_note="The emulator's heap ($emu_heap_mb MB, 2/5 of RAM) is below the ~5 GB one drain needs: expect GC stalls."
    fi
else
    fs_note="Firestore emulator or java missing: Firestore rows skipped."
fi

pg_note=""
have_pg=""
if [[ " $sinks " != *" postgresql "* ]]; then
    pg_note="PostgreSQL not run (UPLINK_SINKS=$sinks)."
elif [ -x "$pg_bin/postgres" ]; then
    scratch_postgres_start "$work"
    psql -q -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -c "CREATE DATABASE peer_template"
    have_pg=1
else
    pg_note="PostgreSQL 15 missing: PostgreSQL rows skipped."
fi

# Ours and the peer alternate (AB, BA, ...) for $rounds rounds, each drain into a fresh
# emulator / a fresh database, so load changes on this shared machine hit both sides alike;
# the verdict is the median of the per-round ratios.
rounds=${UPLINK_ROUNDS:-3}
raw_all=""
peer_all=""
pgrows=""
fs_bodies=""
if [ -n "$have_fs" ]; then
    # The commit bodies, for the warm-ups and the peer (the same ones ours sends).
    fs_bodies=$("$bench" uplink "$work/bodies" --chunks "$chunks" --no-null-sink --bodies-only | sed -n 's/^firestore_bodies=//p')
fi
run_ours() {  # $1 = round
    local r=$1 out="" load
    load=$(cut -d' ' -f1 /proc/loadavg)
    if [ -n "$have_fs" ]; then
        fresh_emulator
        out+=$("$bench" uplink "$work/ours-$r-fs" --chunks "$chunks" --no-null-sink --emulator "127.0.0.1:$emu_port" --project "bench-ours-$r")
        out+=$'\n'
        # Stopped before the PostgreSQL drain, as for the peer: a JVM holding a drain's
        # documents keeps collecting garbage for a while.
        stop_emulator
    fi
    local a=("$work/ours-$r" --chunks "$chunks")
    if (( r > 1 )); then a+=(--no-null-sink); fi
    if [ -n "$have_pg" ]; then
        psql -q -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -c "CREATE DATABASE ours_$r"
        a+=(--pg-port "$pg_port" --database "ours_$r" --peer-database peer_template)
    fi
    out+=$("$bench" uplink "${a[@]}")
    raw_all+="round $r ours"$'\n'"$out"$'\n'
    pgrows=$(printf '%s\n' "$out" | sed -n 's/^postgresql_rows=//p')
    printf '%s\n' "$out" "load=$load" | sed "s/^/r${r}_/" >> "$work/ours.kv"
}
run_peer() {  # $1 = round; PostgreSQL rows from the latest run of ours
    local r=$1 out=""
    out+="peer_load=$(cut -d' ' -f1 /proc/loadavg)"$'\n'
    if [ -n "$have_fs" ]; then
        fresh_emulator
        out+=$(/usr/bin/python3 "$here/uplink_peer.py" firestore "$(commit_url "bench-peer-$r")" "$fs_bodies")
        out+=$'\n'
        stop_emulator
    fi
    if [ -n "$have_pg" ] && [ -n "$pgrows" ]; then
        psql -q -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -c "CREATE DATABASE peer_$r TEMPLATE peer_template"
        out+=$(/usr/bin/python3 "$here/uplink_peer.py" postgresql "$pg_port" "$pgrows" "peer_$r")
        out+=$'\n'
    fi
    peer_all+="round $r peer"$'\n'"$out"
    printf '%s\n' "$out" | sed "s/^/r${r}_/" >> "$work/peer.kv"
}
: > "$work/ours.kv"
: > "$work/peer.kv"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq "$rounds"); do
    # The peer needs ours' bodies: the first round starts with ours.
    if (( r % 2 )); then run_ours "$r"; run_peer "$r"; else run_peer "$r"; run_ours "$r"; fi
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
kv() { sed -n "s/^$2=//p" "$work/$1.kv" | head -1; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
raw=$(sed -n 's/^r1_//p' "$work/ours.kv")
value() { printf '%s\n' "$raw" | sed -n "s/^$1=//p"; }

rows=""
verdicts=""
per_round=""
for sink in firestore postgresql; do
    [ -n "$(value ${sink}_wall_s)" ] || continue
    n=$(value ${sink}_documents)
    : > "$work/$sink.rounds"
    for r in $(seq "$rounds"); do
        ow=$(kv ours r${r}_${sink}_wall_s); oc=$(kv ours r${r}_${sink}_cpu_s)
        pw=$(kv peer r${r}_peer_${sink}_wall_s); pc=$(kv peer r${r}_peer_${sink}_cpu_s)
        [ -n "$ow" ] && [ -n "$pw" ] || continue
        ol=$(kv ours r${r}_load); pl=$(kv peer r${r}_peer_load)
        echo "$ow $pw $oc $pc $ol $pl" | awk -v n="$n" '{ printf "%s %s %s %s %.3f %.3f %.3f %.3f %s %s\n", $1, $2, $3, $4, $2 / $1, $3 * 1000 / n, $4 * 1000 / n, $3 / $4, $5, $6 }' >> "$work/$sink.rounds"
    done
    ow=$(awk '{ print $1 }' "$work/$sink.rounds" | median); pw=$(awk '{ print $2 }' "$work/$sink.rounds" | median)
    ratio=$(awk '{ print $5 }' "$work/$sink.rounds" | median)
    ocd=$(awk '{ print $6 }' "$work/$sink.rounds" | median); pcd=$(awk '{ print $7 }' "$work/$sink.rounds" | median)
    cpu_ratio=$(awk '{ print $8 }' "$work/$sink.rounds" | median)
    k=$(wc -l < "$work/$sink.rounds")
    line=$(awk -v n="$n" -v ow="$ow" -v pw="$pw" -v r="$ratio" -v ocd="$ocd" -v pcd="$pcd" -v cr="$cpu_ratio" -v s="$sink" -v k="$k" 'BEGIN {
        printf "| %s: documents/s (median of %d rounds) | %.1f | %.1f | %.2f (median of per-round ratios) |\n", s, k, n/ow, n/pw, r;
        printf "| %s: CPU ms per document (client process) | %.2f | %.2f | %.1f× |\n", s, ocd, pcd, cr;
        printf "| %s: wall s for %d documents (median) | %.2f | %.2f | |", s, n, ow, pw }')
    rows+="$line"$'\n'
    verdict=$(awk -v r="$ratio" -v s="$sink" 'BEGIN {
        wall = (1 / r <= 1.10) ? "met" : "NOT met";
        printf "%s: wall-time overhead %+.0f%% vs the plain client (median of per-round ratios; goal < +10%%: %s).", s, (1 / r - 1) * 100, wall }')
    verdicts+="$verdict "
    per_round+="$sink (our wall s, peer wall s, our CPU s, peer CPU s, throughput ratio, our CPU ms/doc, peer CPU ms/doc, CPU ratio, 1-min load when ours started, when the peer started):"$'\n'"$(sed 's/^/    /' "$work/$sink.rounds")"$'\n'
done

{
    echo "### Uplink"
    echo
    echo "Drain of a one-hour backlog of 4 boards at 100 Hz ($chunks chunks of 2,000 points + 1 records document, 4 documents per commit, one session) on loopback. Ours: the sync service reading the SQLite buffer, encoding and committing; peer: a plain Python client sending the same commit bodies (requests) / the same statements and rows (psycopg2) prepared in advance."
    echo
    echo "| case | ours | peer | ratio |"
    echo "|---|---:|---:|---:|"
    printf '%s' "$rows"
    echo
    echo "Goal: our overhead under 10% of the plain client's, wall time bounded by the server. $verdicts $fs_note $pg_note"
    echo
    echo "Load average (1/5/15 min) before: $load_before; after: $load_after. Ours and the peer alternate (AB, BA, ...), each into a fresh database / a fresh Firestore emulator of its own (JVM heap fixed at $emu_heap_mb MB and touched at start, $emu_jvm_options, warmed by the first $warmup_commits commits into a separate project before the measured drain; the emulator keeps even deleted documents in its heap, so one emulator for several drains fills up). Per round:"
    echo
    printf '%s' "$per_round"
    echo
    echo "<details><summary>raw</summary>"
    echo
    printf '%s\n%s\n' "$raw_all" "$peer_all" | sed 's/^/    /'
    echo
    echo "</details>"
} > "$out"
