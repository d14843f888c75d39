# Sourced by the scripts that run a PostgreSQL server of their own on loopback: the uplink
# benchmark (scripts/bench/uplink.sh) and the link-order profile (scripts/orderfile/profile.sh).
#
#   free_port                    prints a free TCP port on 127.0.0.1
#   scratch_postgres_start DIR   PostgreSQL 15 initialised into DIR/pg (trust authentication,
#                                superuser postgres), run as nobody when we are root, listening
#                                on 127.0.0.1:$pg_port with its socket in DIR; sets pg_port and
#                                pg_pid (the postmaster) once it accepts connections
#   scratch_postgres_stop        fast shutdown, waited for (up to 10 s)
pg_bin=/usr/lib/postgresql/15/bin
pg_pid=""
pg_port=""

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

scratch_postgres_start() {
    local dir=$1 as=()
    pg_port=$(free_port)
    chmod 755 "$dir"
    if [ "$(id -u)" -eq 0 ]; then as=(runuser -u nobody --); chown nobody "$dir"; fi
    "${as[@]}" "$pg_bin/initdb" -D "$dir/pg" -A trust -U postgres --no-sync -E UTF8 > /dev/null
    # Default durability (fsync on): what is measured against it is what a real server does.
    "${as[@]}" "$pg_bin/postgres" -D "$dir/pg" -c listen_addresses=127.0.0.1 -p "$pg_port" -k "$dir" > "$dir/pg.log" 2>&1 &
    for _ in $(seq 120); do "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port" && break; sleep 0.5; done
    pg_pid=$(head -1 "$dir/pg/postmaster.pid")
}

scratch_postgres_stop() {
    [ -n "$pg_pid" ] || return 0
    kill -INT "$pg_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pg_pid" 2>/dev/null || break; sleep 0.2; done
    pg_pid=""
}
