# Sourced by scripts/bench/footprint.sh, which measures mwgated on this workload, and by
# scripts/orderfile/profile.sh, which lays out mwgated's code for it: one definition, so the
# link order follows the workload the footprint goal is measured on.
#
#   footprint_workload_start DIR BUS_ADDRESS MWSIM   # the boards, and the configuration below
#   footprint_private_workload MWSIM                 # the same on a new private bus (private-bus.sh,
#                                                    # sourced before): sets work, exports the bus address
#   footprint_boards_start DIR BUS_ADDRESS MWSIM     # mwsim: 4 boards of both chip profiles
#   footprint_config DIR [SINK_TOML]                 # DIR/etc/mwgated.toml
#
# mwsim is registered with bench_track (private-bus.sh). The configuration: gyro at 100 Hz,
# always-on recording, the directory sink into DIR/documents, or the [sink] tables of the TOML
# file SINK_TOML (default: $FOOTPRINT_SINK_TOML) to measure another upstream. DIR/state and
# DIR/run are the daemon's state and runtime directories.
footprint_boards=4

footprint_boards_start() {
    local dir=$1 address=$2 mwsim=$3
    "$mwsim" --bus "$address" --boards "$footprint_boards" --model mixed --quiet --discovery-delay 0.1 \
        > "$dir/mwsim.log" 2>&1 &
    bench_track $!
}

footprint_config() {
    local dir=$1 sink=${2:-${FOOTPRINT_SINK_TOML:-}}
    mkdir -p "$dir/state" "$dir/run" "$dir/etc" "$dir/documents"
    printf '[boards]\ngyro_rate = 100\n\n[session]\nmode = "always"\n\n' > "$dir/etc/mwgated.toml"
    if [[ -n "$sink" ]]; then
        cat "$sink" >> "$dir/etc/mwgated.toml"
    else
        printf '[sink]\ntype = "directory"\n\n[sink.directory]\npath = "%s"\n' "$dir/documents" >> "$dir/etc/mwgated.toml"
    fi
}

footprint_workload_start() {
    footprint_boards_start "$1" "$2" "$3"
    footprint_config "$1"
}

footprint_private_workload() {
    private_bus_start
    work=$bus_dir
    export DBUS_SYSTEM_BUS_ADDRESS=$bus_address
    footprint_workload_start "$work" "$bus_address" "$1"
}
