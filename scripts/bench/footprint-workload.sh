# Sourced by scripts/bench/footprint.sh, which measures mwgated on this workload, and by
# scripts/orderfile/profile.sh, which lays out mwgated's code for it: one definition, so the
# link order follows the workload the footprint goal is measured on.
#
#   footprint_workload_start DIR BUS_ADDRESS MWSIM
#
# Starts mwsim with 4 simulated boards (both chip profiles) on the bus (registered with
# bench_track from private-bus.sh) and writes DIR/etc/mwgated.toml: gyro at 100 Hz, always-on
# recording, the directory sink into DIR/documents; DIR/state and DIR/run are the daemon's
# state and runtime directories.
footprint_boards=4

footprint_workload_start() {
    local dir=$1 address=$2 mwsim=$3
    "$mwsim" --bus "$address" --boards "$footprint_boards" --model mixed --quiet --discovery-delay 0.1 \
        > "$dir/mwsim.log" 2>&1 &
    bench_track $!
    mkdir -p "$dir/state" "$dir/run" "$dir/etc" "$dir/documents"
    cat > "$dir/etc/mwgated.toml" <<EOF
[boards]
gyro_rate = 100

[session]
mode = "always"

[sink]
type = "directory"

[sink.directory]
path = "$dir/documents"
EOF
}
