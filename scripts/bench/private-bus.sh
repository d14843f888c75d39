# Sourced by the benchmark scripts that need a D-Bus bus of their own (dbus, boards, control,
# footprint): a temporary work directory, a private dbus-daemon listening in it, and one EXIT
# trap that stops every process the script registered (newest first) and removes the directory.
#
#   . "$(dirname "$0")/private-bus.sh"
#   private_bus_start [EXTRA_CONFIG_XML]   # sets bus_dir, bus_address, bus_pid
#   some-server --address "$bus_address" & bench_track $!
#
# EXTRA_CONFIG_XML goes inside <busconfig> (for example <limit> elements).

bus_dir=$(mktemp -d /tmp/mwgate-bench.XXXXXX)
bus_address=""
bus_pid=""
bench_pids=()

# Registers a process to be stopped (TERM, then waited for) when the script exits.
bench_track() { bench_pids+=("$1"); }

bench_cleanup() {
    local status=$?
    trap - EXIT INT TERM
    local i
    for ((i = ${#bench_pids[@]} - 1; i >= 0; i--)); do
        kill -TERM "${bench_pids[i]}" 2>/dev/null || true
        wait "${bench_pids[i]}" 2>/dev/null || true
    done
    rm -rf "$bus_dir"
    exit "$status"
}
trap bench_cleanup EXIT INT TERM

private_bus_start() {
    cat > "$bus_dir/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=$bus_dir/bus</listen>
  <auth>EXTERNAL</auth>
  ${1:-}
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
    <allow user="*"/>
  </policy>
</busconfig>
CONF
    /usr/bin/dbus-daemon --config-file="$bus_dir/bus.conf" --nofork --nopidfile --print-address=3 \
        3> "$bus_dir/bus.address" 2> "$bus_dir/bus.log" &
    bus_pid=$!
    bench_track "$bus_pid"
    local _
    for _ in $(seq 200); do [[ -s "$bus_dir/bus.address" ]] && break; sleep 0.05; done
    bus_address=$(head -1 "$bus_dir/bus.address")
    [[ -n "$bus_address" ]] || { echo "private-bus.sh: dbus-daemon did not start: $(cat "$bus_dir/bus.log")" >&2; return 1; }
}
