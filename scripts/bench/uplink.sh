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
pg_pid=""
pgbin=/usr/lib/postgresql/15/bin
cleanup() {
    if [ -n "$emu_pid" ]; then kill -TERM -- "-$emu_pid" 2>/dev/null || true; sleep 1; kill -KILL -- "-$emu_pid" 2>/dev/null || true; fi
    if [ -n "$pg_pid" ]; then kill -INT "$pg_pid" 2>/dev/null || true; for _ in $(seq 50); do kill -0 "$pg_pid" 2>/dev/null || break; sleep 0.2; done; fi
    rm -rf "$work"
}
trap cleanup EXIT
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

args=("$work" --chunks "$chunks")
launcher=/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud_firestore_emulator
fs_note=""
if [ -x "$launcher" ] && command -v java >/dev/null; then
    emu_port=$(free_port)
    setsid "$launcher" start --host=127.0.0.1 --port="$emu_port" --project_id=bench-default > "$work/emulator.log" 2>&1 &
    emu_pid=$!
    for _ in $(seq 120); do curl -s -o /dev/null "http://127.0.0.1:$emu_port/" && break; sleep 0.5; done
    args+=(--emulator "127.0.0.1:$emu_port")
else
    fs_note="Firestore emulator or java missing: Firestore rows skipped."
fi

pg_note=""
if [ -x "$pgbin/postgres" ]; then
    pg_port=$(free_port)
    as=()
    if [ "$(id -u)" -eq 0 ]; then as=(runuser -u nobody --); chown nobody "$work"; fi
    "${as[@]}" "$pgbin/initdb" -D "$work/pg" -A trust -U postgres --no-sync -E UTF8 > /dev/null
    # Default durability (fsync on): the numbers are what a real server does.
    "${as[@]}" "$pgbin/postgres" -D "$work/pg" -c listen_addresses=127.0.0.1 -p "$pg_port" -k "$work" > "$work/pg.log" 2>&1 &
    pg_pid=$!
    for _ in $(seq 120); do "$pgbin/pg_isready" -q -h 127.0.0.1 -p "$pg_port" && break; sleep 0.5; done
    pg_pid=$(head -1 "$work/pg/postmaster.pid")
    psql -q -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -c "CREATE DATABASE ours" -c "CREATE DATABASE peer"
    args+=(--pg-port "$pg_port")
else
    pg_note="PostgreSQL 15 missing: PostgreSQL rows skipped."
fi

raw=$("$bench" uplink "${args[@]}")
value() { printf '%s\n' "$raw" | sed -n "s/^$1=//p"; }
peer=""
if [ -n "$(value firestore_bodies)" ]; then
    # Same starting state for the peer: an empty emulator (warm JVM).
    for project in bench-ours bench-warmup; do
        curl -s -o /dev/null -X DELETE "http://127.0.0.1:$emu_port/emulator/v1/projects/$project/databases/(default)/documents"
    done
    peer+=$(/usr/bin/python3 "$here/uplink_peer.py" firestore \
        "http://127.0.0.1:$emu_port/v1/projects/bench-peer/databases/(default)/documents:commit" "$(value firestore_bodies)")
    peer+=$'\n'
fi
if [ -n "$(value postgresql_rows)" ]; then
    peer+=$(/usr/bin/python3 "$here/uplink_peer.py" postgresql "$pg_port" "$(value postgresql_rows)")
fi
pvalue() { printf '%s\n' "$peer" | sed -n "s/^$1=//p"; }

rows=""
verdicts=""
for sink in firestore postgresql; do
    [ -n "$(value ${sink}_wall_s)" ] || continue
    n=$(value ${sink}_documents)
    ow=$(value ${sink}_wall_s); oc=$(value ${sink}_cpu_s)
    pw=$(pvalue peer_${sink}_wall_s); pc=$(pvalue peer_${sink}_cpu_s)
    line=$(awk -v n="$n" -v ow="$ow" -v oc="$oc" -v pw="$pw" -v pc="$pc" -v s="$sink" 'BEGIN {
        printf "| %s: documents/s | %.1f | %.1f | %.2f |\n", s, n/ow, n/pw, (n/ow)/(n/pw);
        printf "| %s: CPU ms per document (client process) | %.2f | %.2f | %.2f |\n", s, oc*1000/n, pc*1000/n, oc/pc;
        printf "| %s: wall s for %d documents | %.2f | %.2f | %.2f |", s, n, ow, pw, ow/pw }')
    rows+="$line"$'\n'
    verdict=$(awk -v ow="$ow" -v pw="$pw" -v oc="$oc" -v pc="$pc" -v s="$sink" 'BEGIN {
        wall = (ow <= pw * 1.10) ? "met" : "NOT met";
        printf "%s: wall-time overhead %+.0f%% vs the plain client (goal < +10%%: %s); CPU %.2f× the plain client'"'"'s.", s, (ow/pw-1)*100, wall, oc/pc }')
    verdicts+="$verdict "
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
    echo "<details><summary>raw</summary>"
    echo
    printf '%s\n%s\n' "$raw" "$peer" | sed 's/^/    /'
    echo
    echo "</details>"
} > "$out"
