#!/usr/bin/python3
"""make test-bluez: the real-BlueZ scenarios (docs/bluez-vm.md). Builds the VM cache when
missing or stale, boots the VM once per scenario group with the host's mwgated, mwctl and mwsim
from MWGATE_BIN (make test and make test-bluez pass release ones, scripts/vm/build-release.sh;
without it run-vm.sh takes the debug build, too slow for the session and stop groups), and
prints every check's verdict and a final 'N passed, N failed' line.
Exit status 1 when any check failed or a group gave no verdicts.

Usage: scripts/vm/test-bluez.py [GROUP ... | all]   (default: the groups make test runs)
Environment: MWGATE_VM_RESULTS (default .build/bluez-vm), SESSION_SECONDS (default 60),
MWGATE_VM_DB_HASH=1 (the board serves a Database Hash; by default it serves none, as a MetaWear),
and those of scripts/vm/run-vm.sh."""
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# What make test (and test-bluez.py without arguments) runs, with release binaries. session
# runs every check of boards first (the same two boards up to streaming), so boards is not run
# beside it: one VM boot less. stop joined on 2026-11-28 (session 16): after ff55eed sidestepped
# bluetoothd 5.66's crash after a connect-state stop, 4 runs at host load 0.1-1.2 (CI's) passed
# 24 of 24 stops, exits 0.19-0.44 s (docs/bluez-vm.md, "Which binaries"); about 35 s a run.
# Its readout moment (session 22: a SIGTERM during a flash-log readout, then the next run fills
# the gap) adds two mwgated runs: 47 s at host load 6.6, 59-101 s at load 10-12.
GROUPS = ["discovery", "faults", "startnotify", "session", "stop", "backfill"]
# Checks that fail today on open defects (docs/bluez-vm.md, "Status"): run them by name, or
# all of them with "all". They join GROUPS once they pass. backfill joined in session 17: 3 of 3
# runs passed at load 1-1.6 (release binaries of d2cea2c, ~2 min each).
OPEN_GROUPS: list[str] = []
EXTRA_GROUPS = ["boards", "bench", "session-stack", "idle", "restarts"]
# Preloaded into bluetoothd for the board without a Database Hash (the default; no_af_alg.c).
NO_HASH_SHIM = "no_af_alg.so"
SCENARIO_FILES = ["scenario.py", "scenario.sh", "document_check.py", "notify_observer.py", "bleak_probe.py", "dbus_boards.py"]


def db_hash_served():
    """MWGATE_VM_DB_HASH=1: the board serves a Database Hash (not a MetaWear's behaviour)."""
    return os.environ.get("MWGATE_VM_DB_HASH", "") not in ("", "0")


def build_no_hash_shim(target):
    """Compiles no_af_alg.c with the host's C compiler, else the Swift toolchain's clang (there
    wherever the binaries under test were built)."""
    for compiler in ("cc", "clang"):
        path = shutil.which(compiler)
        if path:
            subprocess.run([path, "-shared", "-fPIC", "-O2", "-o", target, os.path.join(HERE, "no_af_alg.c")],
                           check=True)
            return
    sys.exit("test-bluez: neither cc nor clang found to build no_af_alg.c (the board without a Database "
             "Hash); install one, or MWGATE_VM_DB_HASH=1 for the board with a hash")


def run_group(group, out):
    scenario = os.path.join(out, group, "scenario")
    results = os.path.join(out, group, "results")
    shutil.rmtree(os.path.join(out, group), ignore_errors=True)
    os.makedirs(scenario)
    os.makedirs(results)
    for name in SCENARIO_FILES:
        shutil.copy(os.path.join(HERE, name), scenario)
    shutil.copy(os.path.join(REPO, "scripts", "soak", "board_signal.py"), scenario)
    with open(os.path.join(scenario, "group"), "w") as f:
        f.write(group)
    with open(os.path.join(scenario, "environment"), "w") as f:
        f.write(f"SESSION_SECONDS={os.environ.get('SESSION_SECONDS', '60')}\n")
        for name in ("BENCH_SECONDS", "LINK_DROPS", "BENCH_BUS_TRACE", "BENCH_NOTIFICATIONS", "BENCH_BACKFILL", "BENCH_READOUT_RATE",
                     "SESSION_RATE", "IDLE_SECONDS", "STOP_ROUNDS", "STOP_MOMENTS", "BACKFILL_NOTIFICATIONS",
                     "BACKFILL_READOUT_RATE", "BACKFILL_AWAY_SECONDS", "RESTARTS"):
            if name in os.environ:
                f.write(f"{name}={os.environ[name]}\n")
        # -d: bluetoothd's debug log, to see where it stopped when it crashes.
        f.write(f"BLUETOOTHD_FLAGS='{os.environ.get('MWGATE_VM_BLUETOOTHD_FLAGS', '')}'\n")
        # 1 (or a period in seconds, e.g. 0.1): the session and bench groups log their processes'
        # CPU share, and that of mwgated's threads, every period (processes.log).
        if os.environ.get("MWGATE_VM_SAMPLE_PROCESSES", "") not in ("", "0"):
            f.write(f"SAMPLE_PROCESSES={os.environ['MWGATE_VM_SAMPLE_PROCESSES']}\n")
        # 1: btmon -w inside the VM, an HCI trace of every controller in results/hci.btsnoop.
        f.write(f"BTMON='{'1' if os.environ.get('MWGATE_VM_BTMON', '') not in ('', '0') else ''}'\n")
        # "Key=Value,...": settings of bluetoothd's main.conf (keys as main.conf spells them, e.g.
        # "ExchangeMTU=23"), to measure what a gateway may set (docs/bluez-vm.md).
        f.write(f"MAIN_CONF='{os.environ.get('MWGATE_VM_MAIN_CONF', '')}'\n")
        # The board serves no Database Hash, as a MetaWear's Nordic SoftDevice serves none
        # (docs/bluez-vm.md), so the gateway's bluetoothd rediscovers the board's primary
        # services on every reconnect: a shim preloaded into bluetoothd refuses it the AF_ALG
        # sockets the hash needs (no_af_alg.c). MWGATE_VM_DB_HASH=1 serves the hash (the VM's
        # board before session 21), to compare.
        if db_hash_served():
            f.write("BOARD_DB_HASH=served\n")
        else:
            f.write(f"BOARD_DB_HASH=none\nBLUETOOTHD_PRELOAD=/scenario/{NO_HASH_SHIM}\n")
    if not db_hash_served():
        build_no_hash_shim(os.path.join(scenario, NO_HASH_SHIM))
    started = time.time()
    vm = subprocess.run([os.path.join(HERE, "run-vm.sh"), scenario, results])
    took = time.time() - started
    checks = []
    path = os.path.join(results, "checks.json")
    if os.path.exists(path):
        with open(path) as f:
            checks = [json.loads(line) for line in f if line.strip()]
    if not checks:
        checks = [{"group": group, "name": f"{group}: the VM gave verdicts", "passed": False,
                   "message": f"none (run-vm status {vm.returncode}); see {results}/console.log and serial.log"}]
    return checks, took


def main():
    groups = sys.argv[1:] or GROUPS
    if groups == ["all"]:
        groups = GROUPS + OPEN_GROUPS
    known = GROUPS + OPEN_GROUPS + EXTRA_GROUPS
    unknown = [g for g in groups if g not in known]
    if unknown:
        sys.exit(f"test-bluez: unknown group(s) {unknown}; groups: {known} or all")
    out = os.environ.get("MWGATE_VM_RESULTS", os.path.join(REPO, ".build", "bluez-vm"))
    started = time.time()
    cache = subprocess.run([os.path.join(HERE, "build-cache.sh")], stdout=subprocess.PIPE, text=True)
    if cache.returncode != 0:
        print("test-bluez: the VM cache could not be built (see above)")
        print("0 passed, 1 failed")
        return 1
    print(f"test-bluez: VM cache ready after {time.time() - started:.0f} s", flush=True)
    if "MWGATE_VM_NO_DB_HASH" in os.environ:
        print("test-bluez: MWGATE_VM_NO_DB_HASH is no longer read: the board serves no Database Hash unless "
              "MWGATE_VM_DB_HASH=1", flush=True)
    print(f"test-bluez: the board serves {'a' if db_hash_served() else 'no'} Database Hash"
          f"{' (MWGATE_VM_DB_HASH=1)' if db_hash_served() else ', as a MetaWear'}", flush=True)
    passed = failed = 0
    for group in groups:
        checks, took = run_group(group, out)
        print(f"test-bluez: group {group}: VM run {took:.0f} s (host load {open('/proc/loadavg').read().split()[0]})",
              flush=True)
        for check in checks:
            verdict = "PASS" if check["passed"] else "FAIL"
            print(f"  {verdict} {check['name']}: {check['message']}", flush=True)
            if check["passed"]:
                passed += 1
            else:
                failed += 1
    print(f"test-bluez: {time.time() - started:.0f} s in all; results in {out}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


sys.exit(main())
