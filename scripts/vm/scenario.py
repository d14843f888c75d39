#!/usr/bin/python3
"""The real-BlueZ scenarios, run as root inside the VM (scripts/vm/vm-init.sh starts this once
the system bus, btvirt's controllers and bluetoothd are up). Boards are `mwsim --peripheral`
on hci1, hci2 (the board model behind bluetoothd's GattManager1); mwgated and mwctl run as the
gateway's user with the packaged D-Bus policy. Every check appends one line to
/results/checks.json: {"name", "passed", "message"}. The argument names a group of scenarios
(see GROUPS at the end); the host side (scripts/vm/test-bluez.py) prints the verdicts.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import dbus

from document_check import check_documents, false_marks_message, read_documents

RESULTS = "/results"
# The directory sink of every Gateway (its documents, one JSON file each).
OUTBOX = "/var/lib/mwgate/outbox"
# bluetoothd's log, in the VM's memory (vm-init.sh copies it to /results at the end).
BLUETOOTHD_LOG = "/run/mwgate-vm/bluetoothd.log"
SYSTEM_BUS = "unix:path=/run/dbus/system_bus_socket"
METAWEAR_COMMAND = "326a9001-85cb-9195-d9dd-464cfbbae75a"
METAWEAR_NOTIFY = "326a9006-85cb-9195-d9dd-464cfbbae75a"
BOARD_SEEDS = {0: 1, 1: 2}  # mwsim --peripheral: board N's signal seed is N + 1
BOARD_MODELS = ("MetaMotion R", "MetaMotion S")  # mwsim --peripheral --model mixed
# The gyro rate mwgated asks for (SESSION_RATE, 100 Hz unless set): the two-board session's
# notifications all cross one TCG VM's two vCPUs (docs/bluez-vm.md, "How long it takes").
GYRO_RATE = int(os.environ.get("SESSION_RATE", "100"))


def log(message):
    print(f"{time.time():.3f} scenario: {message}", flush=True)


class Checks:
    def __init__(self, group):
        self.group = group
        self.path = os.path.join(RESULTS, "checks.json")

    def metric(self, name, value):
        """A measured number for the benchmark (scripts/bench/bluez.sh), one JSON line each."""
        log(f"metric {name} = {value}")
        with open(os.path.join(RESULTS, "metrics.json"), "a") as f:
            f.write(json.dumps({"group": self.group, "name": name, "value": value}) + "\n")

    def record(self, name, passed, message):
        log(f"{'PASS' if passed else 'FAIL'} {name}: {message}")
        with open(self.path, "a") as f:
            f.write(json.dumps({"group": self.group, "name": name, "passed": bool(passed), "message": message}) + "\n")


def bluez_objects():
    bus = dbus.SystemBus()
    manager = dbus.Interface(bus.get_object("org.bluez", "/"), "org.freedesktop.DBus.ObjectManager")
    return manager.GetManagedObjects()


def adapter_address(name):
    return str(bluez_objects()[dbus.ObjectPath(f"/org/bluez/{name}")]["org.bluez.Adapter1"]["Address"])


def power(name, on=True, timeout=60):
    """Adapter1.Powered; bluetoothd answers Busy (or has no adapter yet) while it sets its
    controllers up after a start, so try again for a while (hci0 was still missing after 20 s
    once, at host load 15 with two VMs running)."""
    deadline = time.time() + timeout
    while True:
        try:
            bus = dbus.SystemBus()
            props = dbus.Interface(bus.get_object("org.bluez", f"/org/bluez/{name}"), "org.freedesktop.DBus.Properties")
            props.Set("org.bluez.Adapter1", "Powered", dbus.Boolean(on))
            return
        except dbus.DBusException as error:
            if time.time() > deadline:
                raise RuntimeError(f"cannot power {name} {'on' if on else 'off'} within {timeout} s: {error}")
            time.sleep(0.3)


def bluetoothd_alive():
    """Whether the bluetoothd the VM started (or the last restart) still runs (a crashed one
    stays a zombie of its parent, so look at its state, not just its pid)."""
    try:
        with open(f"/proc/{int(open('/run/bluetoothd.pid').read())}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, ValueError):
        return False


def bluetoothd_fault():
    """How bluetoothd ended, from the kernel's log (its segfault line: the faulting address, and
    the instruction's offset in the binary) and the core files vm-init.sh has it leave."""
    kernel = subprocess.run(["dmesg"], capture_output=True, text=True).stdout.splitlines()
    faults = [line.split("] ", 1)[-1] for line in kernel if "bluetoothd" in line and ("segfault" in line or "trap" in line)]
    cores = sorted(name for name in os.listdir("/run/mwgate-vm") if name.startswith("core.bluetoothd"))
    return (f"kernel: {faults[-1]!r}" if faults else "no segfault line from the kernel") + \
        (f", core {cores[-1]} (results/)" if cores else ", no core file")


def restart_bluetoothd(adapters):
    """SIGTERM to bluetoothd (if it still runs), a new one with the VM's flags, adapters powered."""
    try:
        pid = int(open("/run/bluetoothd.pid").read())
        os.kill(pid, signal.SIGTERM)
        wait_for("bluetoothd gone", lambda: not bluetoothd_alive(), 5, interval=0.1)
    except (OSError, ValueError):
        pass
    # Started as vm-init.sh starts it: with the shim that keeps the board without a Database
    # Hash (unless MWGATE_VM_DB_HASH=1), or the restarted bluetoothd would serve one.
    environment = dict(os.environ, LD_PRELOAD=os.environ["BLUETOOTHD_PRELOAD"]) \
        if os.environ.get("BLUETOOTHD_PRELOAD") else None
    proc = subprocess.Popen(["/usr/libexec/bluetooth/bluetoothd", "-n", *os.environ.get("BLUETOOTHD_FLAGS", "").split()],
                            stdout=open(BLUETOOTHD_LOG, "a"), stderr=subprocess.STDOUT, env=environment)
    with open("/run/bluetoothd.pid", "w") as f:
        f.write(str(proc.pid))
    for name in adapters:
        power(name)


def bluetoothd_survived(checks, during, adapters):
    """A failed check when bluetoothd died (it segfaults on some link teardowns, see
    docs/bluez-vm.md); then a new one, so that the scenarios after it still run."""
    if bluetoothd_alive():
        return True
    with open(BLUETOOTHD_LOG) as f:
        last = [line.strip() for line in f if line.strip()][-3:]
    checks.record(f"bluetoothd 5.66 still running after {during}", False,
                  f"bluetoothd died ({bluetoothd_fault()}; last log lines: {last}); started again for the next scenarios")
    restart_bluetoothd(adapters)
    return False


def wait_for(what, predicate, timeout, interval=0.5):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            value = predicate()
        except Exception:  # the daemon or bluetoothd may be between states
            value = None
        if value:
            return value
        time.sleep(interval)
    log(f"gave up waiting for {what} after {timeout} s")
    return None


class Boards:
    """mwsim --peripheral, one board per adapter; commands go to its standard input."""

    def __init__(self, adapters, *flags, model="mixed"):
        self.adapters = adapters
        self.addresses = [adapter_address(a) for a in adapters]
        argv = ["/mwgate/mwsim", "--bus", SYSTEM_BUS, "--quiet", "--model", model, *flags]
        for adapter in adapters:
            argv += ["--peripheral", adapter]
        self.log = open(os.path.join(RESULTS, "mwsim.log"), "a")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=self.log, stderr=self.log, text=True)
        log(f"boards {self.addresses} on {adapters} ({' '.join(flags) or 'defaults'})")
        registered = wait_for("boards registered", lambda: self.proc.poll() is not None or open(
            os.path.join(RESULTS, "mwsim.log")).read().count("registered") >= len(adapters), 120, interval=0.2)
        if self.proc.poll() is not None or not registered:
            raise RuntimeError(f"mwsim --peripheral did not register its boards: "
                               f"{open(os.path.join(RESULTS, 'mwsim.log')).read()[-500:]}")

    def command(self, board, verb):
        log(f"board {board}: {verb}")
        sent = time.time()
        self.proc.stdin.write(f"{board} {verb}\n")
        self.proc.stdin.flush()
        return sent

    def command_latency(self, board, sent, timeout=10):
        """Seconds from writing a command until board `board` logged it (None: not within
        `timeout`): how far the peripheral lags behind the test."""
        marker = f"mwsim peripheral {self.adapters[board]}: command "

        def acted():
            with open(os.path.join(RESULTS, "mwsim.log")) as f:
                for line in f:
                    if marker in line and float(line.split()[0]) >= sent - 0.01:
                        return float(line.split()[0])
            return None
        at = wait_for(f"board {board} acting on its command", acted, timeout, interval=0.1)
        return None if at is None else max(0.0, at - sent)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


class Gateway:
    """mwgated as the mwgate user with the packaged policy, plus mwctl as root."""

    def __init__(self, name, boards_toml, session_mode="manual"):
        self.name = name
        config = f"""[boards]
{boards_toml}
gyro_rate = {GYRO_RATE}

[gnss]
source = "none"

[session]
mode = "{session_mode}"

[log]
level = "debug"

[buffer]
# The VM's disk has a few hundred MB free; the default floor (256 MB) would drop chunks.
free_space_floor = "32 MB"

[sink]
type = "directory"

[sink.directory]
path = "{OUTBOX}"
"""
        with open("/etc/mwgate/mwgated.toml", "w") as f:
            f.write(config)
        self.logfile = open(os.path.join(RESULTS, f"mwgated-{name}.log"), "a")
        env = {"PATH": "/usr/bin:/bin", "STATE_DIRECTORY": "/var/lib/mwgate", "CONFIGURATION_DIRECTORY": "/etc/mwgate"}
        # setpriv execs mwgated itself, so SIGTERM reaches it directly and its exit is timed.
        self.proc = subprocess.Popen(["setpriv", "--reuid=mwgate", "--regid=mwgate", "--init-groups", "/mwgate/mwgated",
                                      "--config", "/etc/mwgate/mwgated.toml"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        # Its lines carry no time (journald adds it on a gateway): add the wall clock, to line
        # them up with the boards' and the scenario's.
        self.logger = threading.Thread(target=self._copy_log, daemon=True)
        self.logger.start()
        self.started = time.time()
        log(f"mwgated ({name}) started: {boards_toml.strip()}")

    def _copy_log(self):
        for line in self.proc.stdout:
            self.logfile.write(f"{time.time():.3f} {line.decode(errors='replace')}")
            self.logfile.flush()
        # End of its output: the kernel closed the process's last descriptor of the pipe, in
        # its exit (before the parent can reap it), so the last line -> here -> the reaped exit
        # tells the process's own exit from the time the scenario takes to see it.
        self.output_ended = time.time()

    def ctl(self, *argv, timeout=60):
        """mwctl as root; one that does not finish in `timeout` is logged and returned as a
        failure (status None) instead of ending the scenario."""
        try:
            return subprocess.run(["/mwgate/mwctl", *argv], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            log(f"mwctl {' '.join(argv)}: no answer within {timeout} s")
            return subprocess.CompletedProcess(argv, None, "", f"no answer within {timeout} s")

    def status(self):
        """GetStatus of the control API, as `mwctl status --json` prints it. Asked over D-Bus
        directly: polling by starting mwctl costs about a second of a TCG vCPU per call."""
        try:
            gateway = dbus.SystemBus().get_object("io.mwgate.Gateway1", "/io/mwgate/Gateway1")
            return json.loads(str(gateway.GetStatus(dbus_interface="io.mwgate.Gateway1", timeout=10)))
        except (dbus.DBusException, ValueError):
            return None

    def board(self, address):
        status = self.status()
        if not status:
            return None
        for b in status["boards"]:
            if b["address"].upper() == address.upper():
                return b
        return None

    def wait_connected(self, address, timeout):
        """The board handshook: idle with its sensors off between sessions, or streaming."""
        return wait_for(f"{address} connected",
                        lambda: (lambda b: b if b and b["state"].split(" ")[0] in ("idle", "streaming") else None)(
                            self.board(address)), timeout)

    def wait_streaming(self, address, timeout):
        return wait_for(f"{address} streaming",
                        lambda: (lambda b: b if b and b["streaming"] and b["gyroSamplesReceived"] > 0 else None)(
                            self.board(address)), timeout)

    def stop(self, grace=10):
        """SIGTERM; returns seconds until exit (None when it had to be killed)."""
        if self.proc.poll() is not None:
            return 0.0
        t0 = time.time()
        self.output_ended = None
        self.proc.send_signal(signal.SIGTERM)
        try:
            # Reaped as soon as it exits: Popen.wait(timeout) polls with sleeps of up to 50 ms.
            self.proc.wait(grace)
            took = time.time() - t0
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            took = None
        self.logger.join(5)
        self.logfile.close()
        return took


def device_connected(address):
    for path, interfaces in bluez_objects().items():
        device = interfaces.get("org.bluez.Device1")
        if device and str(device["Address"]).upper() == address.upper() and str(device["Adapter"]) == "/org/bluez/hci0":
            return bool(device["Connected"])
    return False


def notify_state(address):
    """(Notifying, NotifyAcquired) of the MetaWear notify characteristic of the gateway's device
    (None when bluetoothd does not answer)."""
    try:
        objects = bluez_objects()
    except dbus.DBusException as error:
        log(f"GetManagedObjects: {error}")
        return None
    for path, interfaces in objects.items():
        chrc = interfaces.get("org.bluez.GattCharacteristic1")
        if not chrc or str(chrc["UUID"]) != METAWEAR_NOTIFY or not str(path).startswith("/org/bluez/hci0/"):
            continue
        service = str(chrc["Service"])
        device = objects[dbus.ObjectPath(service.rsplit("/", 1)[0])]["org.bluez.Device1"]
        if str(device["Address"]).upper() == address.upper():
            return bool(chrc.get("Notifying", False)), bool(chrc.get("NotifyAcquired", False))
    return None


SERVICE_CHANGED = "00002a05-0000-1000-8000-00805f9b34fb"
DATABASE_HASH = "00002b2a-0000-1000-8000-00805f9b34fb"


def gateway_view_of_generic_attribute(address):
    """The UUIDs of the characteristics the gateway's bluetoothd exports for the board at
    `address` (its Generic Attribute service among them), or None when it has no device object."""
    objects = bluez_objects()
    device = next((path for path, interfaces in objects.items()
                   if "org.bluez.Device1" in interfaces and str(path).startswith("/org/bluez/hci0/")
                   and str(interfaces["org.bluez.Device1"]["Address"]).upper() == address.upper()), None)
    if device is None:
        return None
    return {str(interfaces["org.bluez.GattCharacteristic1"]["UUID"]) for path, interfaces in objects.items()
            if "org.bluez.GattCharacteristic1" in interfaces and str(path).startswith(str(device) + "/")}


def check_database_hash(checks, name, address):
    """That the board serves what the VM promises (test-bluez.py): no Database Hash (0x2B2A) under
    its Generic Attribute service, as a MetaWear's SoftDevice, unless MWGATE_VM_DB_HASH=1. The
    Service Changed characteristic (0x2A05, there in both) shows that the service was seen."""
    served = os.environ.get("BOARD_DB_HASH", "served") == "served"
    seen = gateway_view_of_generic_attribute(address)
    passed = seen is not None and SERVICE_CHANGED in seen and (DATABASE_HASH in seen) == served
    checks.record(name, passed,
                  f"expected {'a' if served else 'no'} Database Hash (BOARD_DB_HASH={os.environ.get('BOARD_DB_HASH')}); "
                  + ("the gateway's bluetoothd has no device object for the board" if seen is None else
                     f"Service Changed {'seen' if SERVICE_CHANGED in seen else 'NOT seen'}, Database Hash "
                     f"{'seen' if DATABASE_HASH in seen else 'not seen'} among {len(seen)} characteristics"))


def documents():
    return read_documents(OUTBOX)


def check_samples(docs, address, seed, session_id=None, resets=False):
    """Sample by sample against the model's signal, each session on its own
    (document_check.py): returns (count, duplicates, reordered, mismatched, gaps) where gaps
    are (first missing index, how many); logs where the first out-of-order sample and the
    first point whose time goes back are."""
    report = check_documents(docs, address, seed, session_id=session_id, resets=resets)
    if report["first_out_of_order"]:
        log(f"{address}: first sample out of order: {report['first_out_of_order']}")
    if report["time_backwards"]:
        log(f"{address}: {report['time_backwards']} points with a time before the previous point's")
    return (report["count"], report["duplicates"], report["reordered"] + report["time_backwards"],
            report["mismatched"], report["gaps"])


def save_documents(name):
    """Copies the outbox out of the VM (results/NAME), so a failed check can be looked at
    again with document_check.py on the host."""
    target = os.path.join(RESULTS, name)
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(OUTBOX, target)


# ---------------------------------------------------------------------------------------------
# Scenario groups: each is one VM boot.

def group_discovery(checks):
    """(1) allow list + by address, advertisement without the service UUID; (6) re-discovery of
    a device bluetoothd already knows, and the connect race."""
    for name in ("hci0", "hci1"):
        power(name)
    boards = Boards(["hci1"], "--no-service-uuid", model="metamotion-r")
    address = boards.addresses[0]
    gateway = Gateway("allow", f'allow = ["{address}"]')
    b = gateway.wait_connected(address, 60)
    checks.record("discovery: allow list, no service UUID in the advertisement", b is not None,
                  f"{address} connected {time.time() - gateway.started:.1f} s after start" if b else
                  f"{address} (advertising without 326a9000) not connected within 60 s; boards: "
                  f"{[x['address'] + ' ' + x['state'] for x in (gateway.status() or {}).get('boards', [])]}")
    if b:
        check_database_hash(checks, "discovery: the board's Database Hash as the VM serves it", address)
    took = gateway.stop()
    wait_for("link closed", lambda: not device_connected(address), 10)
    # bluetoothd keeps the device object (and its resolved services); a new daemon must find it.
    gateway = Gateway("address", f'addresses = ["{address}"]')
    b = gateway.wait_connected(address, 60)
    checks.record("discovery: configured by address, no service UUID, device already known to bluetoothd",
                  b is not None,
                  f"connected {time.time() - gateway.started:.1f} s after start" if b else
                  f"{address} not connected within 60 s: {gateway.board(address)}")
    gateway.stop()
    boards.stop()


def hci_links(adapter):
    """Addresses `adapter` has an LE link to, as the kernel lists them (hcitool con)."""
    result = subprocess.run(["hcitool", "-i", adapter, "con"], capture_output=True, text=True, timeout=10)
    return result.stdout.upper()


def dummy_link(adapter, address, timeout=60):
    """An LE link from `adapter` to the advertising board at `address`, made below bluetoothd
    with HCI LE Create Connection (hcitool lecc): no scan, so it does not depend on when btvirt
    reports the board's advertisement. True once the kernel lists the link."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            result = subprocess.run(["hcitool", "-i", adapter, "lecc", address], capture_output=True, text=True,
                                    timeout=20)
            log(f"hcitool -i {adapter} lecc {address}: status {result.returncode} "
                f"{result.stdout.strip()} {result.stderr.strip()}")
        except subprocess.TimeoutExpired:
            log(f"hcitool -i {adapter} lecc {address}: no answer in 20 s")
        if wait_for(f"link {adapter} -> {address}", lambda: address.upper() in hci_links(adapter), 5, interval=0.5):
            return True
        time.sleep(1)
    return False


def two_boards_on_one_air(checks, model, check_name):
    """Two boards (hci1, hci2) whose links from hci0 get matching connection handles on both
    sides: btvirt tells a second peripheral the central's handle instead of its own
    (real-bluez-vm.md §6; emulator/btdev.c le_conn_complete), so a spare controller (hci3) first
    holds a dummy link to board 1, and board 1 advertises only once board 0 is connected. The
    dummy link is recorded as the check `check_name`."""
    for name in ("hci0", "hci1", "hci2", "hci3"):
        power(name)
    spare = adapter_address("hci3")
    boards = Boards(["hci1", "hci2"], "--ignore-central", spare, model=model)
    second = boards.addresses[1]
    dummy = dummy_link("hci3", second)
    boards.command(1, "remove")
    checks.record(check_name, dummy, f"hci3 -> {second}: {'connected' if dummy else 'not connected within 60 s'}")
    return boards


def two_boards_streaming(checks):
    """(1)-(3), (7) with two boards: both handshake; StartNotify on board 0, whose notify
    session another client (as bleak would) already holds, so bluetoothd refuses AcquireNotify;
    AcquireNotify on board 1; Device Information exported: boards named. Returns the boards, the
    gateway (recording a session) and the session start's mwctl result. The boards come up
    with btvirt's handle workaround (two_boards_on_one_air): the gateway's link to board 1 is
    then number 43 on both sides."""
    boards = two_boards_on_one_air(
        checks, "mixed", "two boards: spare controller's dummy link to board 1 (btvirt handle workaround)")
    first, second = boards.addresses
    # Board 0 first gets a StartNotify session from another client.
    observer = subprocess.Popen(["python3", "/scenario/notify_observer.py", first],
                                stdout=open(os.path.join(RESULTS, "observer.log"), "a"), stderr=subprocess.STDOUT)
    observed = wait_for("observer subscribed", lambda: os.path.exists("/tmp/observer-ready"), 90)
    gateway = Gateway("two-boards", f'addresses = ["{first}", "{second}"]')
    ready0 = gateway.wait_connected(first, 90)
    boards.command(1, "restore")
    ready1 = gateway.wait_connected(second, 90)
    ready = [ready0, ready1]
    checks.record("two boards: both handshake", all(ready),
                  f"both connected {time.time() - gateway.started:.1f} s after start" if all(ready) else
                  f"not connected within 90 s: {[a for a, r in zip((first, second), ready) if not r]}")
    started = gateway.ctl("session", "start")
    ready = [gateway.wait_streaming(a, 30) for a in (first, second)]
    paths = [notify_state(a) for a in (first, second)]
    checks.record("notification path: StartNotify when AcquireNotify is refused",
                  bool(observed) and paths[0] is not None and paths[0][1] is False and bool(ready[0]),
                  f"board 0 (Notifying, NotifyAcquired) = {paths[0]}, another client held a notify session: "
                  f"{bool(observed)}, streaming: {bool(ready[0])}")
    # bluetoothd 5.66 leaves Notifying false for an acquired notify (seen here); mwsim's model
    # of bluetoothd sets both.
    checks.record("notification path: AcquireNotify where bluetoothd offers it",
                  paths[1] is not None and paths[1][1] is True and bool(ready[1]),
                  f"board 1 (Notifying, NotifyAcquired) = {paths[1]}, streaming: {bool(ready[1])}")
    # The other client leaves before the recording (a gateway normally has its boards to
    # itself); mwgated stays on StartNotify with its own session.
    observer.terminate()
    observer.wait()
    status = gateway.status() or {"boards": []}
    models = {b["address"].upper(): b.get("model") for b in status["boards"]}
    named = [str(models.get(a.upper()) or "").startswith(name) for a, name in zip((first, second), BOARD_MODELS)]
    checks.record("Device Information exported: boards named", all(named),
                  f"models {models}, expected {BOARD_MODELS}")
    return boards, gateway, (first, second), started


def group_boards(checks):
    """Two boards at once up to streaming: see two_boards_streaming."""
    boards, gateway, _, _ = two_boards_streaming(checks)
    gateway.ctl("session", "stop")
    gateway.stop()
    boards.stop()


def group_session(checks):
    """(2) a 60 s session at 100 Hz from two boards, checked sample by sample (after what
    group_boards checks). Not in make test yet: on btvirt the two links stalled within seconds
    (writes unanswered, bluetoothd not reading the board's notify socket), docs/bluez-vm.md."""
    seconds = float(os.environ.get("SESSION_SECONDS", "60"))
    # Costs a TCG vCPU a few percent itself: only when asked for (MWGATE_VM_SAMPLE_PROCESSES).
    sampler = ProcessSampler(float(os.environ["SAMPLE_PROCESSES"])) if os.environ.get("SAMPLE_PROCESSES") else None
    boards, gateway, (first, second), started = two_boards_streaming(checks)
    t0 = time.time()
    cpu0, samples0, vm0 = process_cpu(gateway.proc.pid), total_samples(gateway), vm_cpu_times()
    count_value_signals(checks, min(10.0, seconds))
    time.sleep(max(0.0, seconds - 10))
    cpu1, samples1, vm1 = process_cpu(gateway.proc.pid), total_samples(gateway), vm_cpu_times()
    busy = vm_busy_percent(vm0, vm1)
    checks.metric("VM CPUs busy during the two-board session, %", busy)
    stopped = gateway.ctl("session", "stop")
    # What mwgated received, beside what the documents hold: tells a sample lost on the way in
    # from one lost between receiving and the documents.
    received = {a: samples_received(gateway, a) for a in (first, second)}
    if samples1 and samples0 is not None and samples1 > samples0:
        checks.metric("mwgated CPU ms per 1000 samples (recording, 2 boards, StartNotify + AcquireNotify)",
                      round(1000 * (cpu1 - cpu0) / ((samples1 - samples0) / 1000), 2))
    wait_for("documents in the outbox", lambda: len(documents()) > 0 and
             all(check_samples(documents(), a, BOARD_SEEDS[i])[0] >= seconds * GYRO_RATE * 0.9
                 for i, a in enumerate((first, second))),
             60)
    docs = documents()
    save_documents("outbox")
    for index, address in enumerate((first, second)):
        # Issue 18 defect 6: a gap mark only where samples are missing. A metric, not a check
        # yet: under a loaded host the VM delivers the two boards' 200 notifications/s later and
        # later (3.5 s behind at the stop), which the time-based detector cannot tell from a
        # loss (docs/bluez-vm.md); make test's session group would fail on it.
        report = check_documents(docs, address, BOARD_SEEDS[index])
        checks.metric(f"session: board {index}: gap marks where no sample is missing (marks, samples they claim)",
                      [report["false_marks"], report["false_marked_samples"]])
        if report["false_marks"]:
            log(false_marks_message(report, address))
        count, duplicates, reordered, mismatched, gaps = check_samples(docs, address, BOARD_SEEDS[index])
        expected = seconds * GYRO_RATE
        ok = count >= expected * 0.97 and not duplicates and not reordered and not mismatched and not gaps
        checks.record(f"session: board {index} documents sample by sample",
                      ok, f"{count} samples for {seconds:.0f} s at {GYRO_RATE} Hz (session {time.time() - t0:.0f} s), "
                      f"{duplicates} duplicated, {reordered} out of order, {mismatched} differ from the model, "
                      f"gaps {gaps[:5]}{'...' if len(gaps) > 5 else ''} ({sum(n for _, n in gaps)} samples), "
                      f"{report['filled_late']} filled late from the log (correction chunks); "
                      f"mwgated received {received[address]} in all; the VM's CPUs were {busy}% busy; "
                      f"session start: {started.returncode} "
                      f"{started.stderr.strip()} stop: {stopped.returncode} {stopped.stderr.strip()}")
    if sampler:
        sampler.stop()
    gateway.stop()
    boards.stop()


class ProcessSampler:
    """Every `period` seconds until stopped: the CPU share (of one vCPU) of the stack's processes
    and of mwgated's threads (by thread name: the recording pipeline's own thread, the shared
    pool, the D-Bus loops), and where bluetoothd waits (wchan, kernel stack), into
    /results/processes.log: which one is saturated, or blocked where, when links stall or a
    reconnect is slow. The kernel counts CPU in 10 ms ticks, so a share over 0.1 s is +-10 %."""

    NAMES = ("bluetoothd", "btvirt", "mwsim", "mwgated", "python3", "dbus-daemon", "btmon")

    def __init__(self, period=1.0):
        self.period = period
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @staticmethod
    def _ticks(path):
        with open(path) as f:
            head, tail = f.read().rsplit(")", 1)
        fields = tail.split()
        return head.split("(", 1)[1], int(fields[11]) + int(fields[12])

    def _run(self):
        ticks = os.sysconf("SC_CLK_TCK")
        previous = {}
        last = time.time()
        with open(os.path.join(RESULTS, "processes.log"), "a") as out:
            while not self.stopping.wait(self.period):
                elapsed, last = time.time() - last, time.time()
                now = {}
                for pid in os.listdir("/proc"):
                    if not pid.isdigit():
                        continue
                    try:
                        name, used = self._ticks(f"/proc/{pid}/stat")
                        if name not in self.NAMES:
                            continue
                        now[(name, pid)] = used
                        if name == "mwgated":
                            threads = {}
                            for tid in os.listdir(f"/proc/{pid}/task"):
                                thread, spent = self._ticks(f"/proc/{pid}/task/{tid}/stat")
                                # The pool's threads share a name: summed.
                                key = (f"mwgated:{thread.rstrip('0123456789-') or thread}", pid)
                                threads[key] = threads.get(key, 0) + spent
                            now.update(threads)
                    except (OSError, IndexError, ValueError):
                        pass
                shares = {f"{n}/{p}": round(100 * (v - previous.get((n, p), v)) / ticks / elapsed)
                          for (n, p), v in sorted(now.items())}
                where = ""
                bluetoothd = [p for (n, p) in now if n == "bluetoothd"]
                if bluetoothd:
                    try:
                        with open(f"/proc/{bluetoothd[0]}/wchan") as f:
                            where = f.read().strip()
                        with open(f"/proc/{bluetoothd[0]}/stack") as f:
                            where += " | " + " < ".join(line.split()[1].split("+")[0] for line in f.readlines()[:4])
                    except (OSError, IndexError):
                        pass
                out.write(f"{time.time():.2f} cpu% {shares} bluetoothd waits in {where}\n")
                out.flush()
                previous = now

    def stop(self):
        self.stopping.set()
        self.thread.join(5)


def group_session_stack(checks):
    """The session group's two boards streaming 100 Hz without mwgated: whether the real stack
    on btvirt carries two boards by itself (not in make test). The central is
    scripts/vm/dbus_boards.py (python3-dbus with AcquireNotify; bleak 0.22 returned from
    connect() with only the GATT service in its view of the second board here). Same handle
    workaround as two_boards_streaming (two_boards_on_one_air)."""
    seconds = float(os.environ.get("SESSION_SECONDS", "60"))
    boards = two_boards_on_one_air(
        checks, "metamotion-r", "two boards without mwgated: spare controller's dummy link to board 1")
    first, second = boards.addresses
    out = open(os.path.join(RESULTS, "central.json"), "w")
    err = open(os.path.join(RESULTS, "central.log"), "w")
    probe = subprocess.Popen(["python3", "/scenario/dbus_boards.py", str(seconds), first, second], stdout=out, stderr=err)
    if not wait_for("board 0 connected", lambda: device_connected(first), 120, interval=0.2):
        checks.record("two boards without mwgated: board 0 connected", False, "not within 120 s")
    boards.command(1, "restore")
    t0 = time.time()
    vm0 = vm_cpu_times()
    sampler = ProcessSampler()
    try:
        probe.wait(seconds + 300)
    except subprocess.TimeoutExpired:
        probe.kill()
        probe.wait()
    sampler.stop()
    busy = vm_busy_percent(vm0, vm_cpu_times())
    out.close()
    err.close()
    with open(os.path.join(RESULTS, "central.json")) as f:
        reports = [json.loads(line) for line in f if line.strip()]
    if len(reports) != 2:
        checks.record("two boards without mwgated: ran to the end", False,
                      f"exit {probe.returncode}; {open(os.path.join(RESULTS, 'central.log')).read()[-400:]}")
    for index, report in enumerate(reports):
        expected = seconds * 100
        ok = report["notifications"] >= expected * 0.97 and not report["duplicates"] and not report["backwards"] \
            and not report["gap_count"] and not report.get("write_failures")
        checks.record(f"two boards without mwgated: board {index} streamed {seconds:.0f} s", ok,
                      f"{report['notifications']} notifications (expected {expected:.0f}), {report['duplicates']} "
                      f"duplicated, {report['backwards']} backwards, {report['gap_count']} gaps {report['gaps'][:5]}, "
                      f"{report.get('write_failures', 0)} writes failed; per second {report['per_second']}; "
                      f"VM CPUs {busy}% busy over {time.time() - t0:.0f} s")
    boards.stop()


def count_value_signals(checks, seconds):
    """What the StartNotify path gets: bluetoothd's PropertiesChanged signals carrying a
    characteristic Value on the gateway's adapter, per characteristic, over `seconds` (dbus-
    monitor as root), beside the notifications the boards sent meanwhile (their logs)."""
    path = os.path.join(RESULTS, "dbus-monitor.log")
    monitor = subprocess.Popen(["dbus-monitor", "--system",
                                "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties',"
                                "member='PropertiesChanged',path_namespace='/org/bluez/hci0'"],
                               stdout=open(path, "w"), stderr=subprocess.STDOUT)
    time.sleep(seconds)
    monitor.terminate()
    monitor.wait()
    counts = {}
    current = None
    with open(path) as f:
        for line in f:
            if line.startswith("signal "):
                current = line.split("path=")[1].split(";")[0] if "path=" in line else None
            elif '"Value"' in line and current:
                counts[current] = counts.get(current, 0) + 1
    for characteristic, count in sorted(counts.items()):
        checks.metric(f"Value PropertiesChanged per second, {characteristic}", round(count / seconds, 1))


def vm_cpu_times():
    """(busy, total) jiffies of the VM's CPUs so far (/proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def vm_busy_percent(before, after):
    busy, total = after[0] - before[0], after[1] - before[1]
    return round(100 * busy / total) if total else 0


def process_cpu(pid):
    """User + system CPU seconds of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def total_samples(gateway):
    status = gateway.status()
    return sum(b["gyroSamplesReceived"] for b in status["boards"]) if status else None


def samples_received(gateway, address):
    b = gateway.board(address)
    return b["gyroSamplesReceived"] if b else None


def seconds_or_never(value):
    return "never" if value is None else f"{value:.1f} s"


def time_to_streaming(gateway, address, timeout):
    """Seconds until status says streaming and new samples keep arriving, or None."""
    t0 = time.time()
    baseline = None
    while time.time() - t0 < timeout:
        b = gateway.board(address)
        if b is not None:
            count = b["gyroSamplesReceived"]
            if baseline is not None and b["streaming"] and count > baseline:
                return time.time() - t0
            if baseline is None or count < baseline:
                baseline = count
        time.sleep(0.25)
    return None


def wait_link(address, up, timeout, board_since=None):
    """Seconds until the gateway's adapter sees the link up (or down), None on timeout.

    With `board_since` (a time), a link down is also taken from the board's own log (hci1's
    "link down from" at or after it): a reconnect faster than the poll (0.3 s from down to up
    in the VM) leaves no Connected=false to see, and the wait then gave up after its whole
    timeout and dated the fault's recovery from there."""
    t0 = time.time()

    def seen():
        if device_connected(address) == up:
            return True
        return not up and board_since is not None and bool(board_log_times("hci1", "link down from", board_since))
    if wait_for(f"{address} link {'up' if up else 'down'}", seen, timeout, interval=0.1):
        return time.time() - t0
    return None


def group_faults(checks):
    """(4) link loss (the board disconnects; the board goes silent until the link drops),
    bluetoothd restarted, board power-cycled, board removed and back; (7) no Device
    Information service: the board is still named."""
    for name in ("hci0", "hci1"):
        power(name)
    boards = Boards(["hci1"], "--no-device-information", model="metamotion-r")
    address = boards.addresses[0]
    gateway = Gateway("faults", f'addresses = ["{address}"]')
    b = gateway.wait_connected(address, 90)
    if not b:
        checks.record("faults: board connected before the faults", False, f"{gateway.board(address)}")
        return
    checks.record("Device Information hidden: board still named from what is always there",
                  bool(b.get("model")) and not str(b.get("model")).lower().startswith("unknown"),
                  f"model shown: {b.get('model')!r} (board is a MetaMotion R without service 180A)")
    gateway.ctl("session", "start")
    if not gateway.wait_streaming(address, 30):
        checks.record("faults: board streaming before the faults", False, f"{gateway.board(address)}")
        return
    time.sleep(3)

    def fault(name, action, back_within, settle=2):
        before = samples_received(gateway, address)
        t0 = time.time()
        action()
        down = wait_link(address, False, 15, board_since=t0)
        back = wait_link(address, True, 30)
        if not bluetoothd_survived(checks, name, ("hci0", "hci1")):
            back = wait_link(address, True, 30)
        streaming = time_to_streaming(gateway, address, back_within)
        total = time.time() - t0
        checks.record(f"{name}: streaming again", streaming is not None,
                      f"link down after {seconds_or_never(down)}, back after {seconds_or_never(back)}, "
                      f"streaming {total:.1f} s after the fault"
                      if streaming is not None else
                      f"not streaming within {back_within} s of the link coming back "
                      f"({gateway.board(address)}, samples before {before})")
        time.sleep(settle)

    # 'restore' of a board in range changes nothing (a press would stop the session).
    sent = boards.command(0, "restore")
    latency = boards.command_latency(0, sent)
    checks.record("the board acts on a command within 1 s while streaming 100 notifications/s",
                  latency is not None and latency <= 1.0,
                  "a command not acted on within 10 s" if latency is None else
                  f"a command acted on after {latency * 1000:.0f} ms")
    fault("link loss: the board disconnects", lambda: boards.command(0, "disconnect"), 20)
    fault("link loss: the board goes silent until the link drops", lambda: boards.command(0, "silence 4"), 25)

    fault("bluetoothd restarted", lambda: restart_bluetoothd(("hci0", "hci1")), 40)
    check_database_hash(checks, "bluetoothd restarted: the board's Database Hash as the VM serves it", address)
    fault("board power-cycled (state reset)", lambda: boards.command(0, "power-cycle"), 30)

    boards.command(0, "remove")
    gone = wait_link(address, False, 15)
    lost = wait_for("board reported not streaming", lambda: (lambda b: b is not None and not b["streaming"])(
        gateway.board(address)), 20)
    checks.record("board removed: reported, not streaming", bool(lost),
                  f"link down after {seconds_or_never(gone)}; status {gateway.board(address)}")
    time.sleep(5)
    fault("board back in range after removal", lambda: boards.command(0, "restore"), 60)
    gateway.ctl("session", "stop")
    wait_for("documents", lambda: documents(), 30)
    time.sleep(3)
    count, duplicates, reordered, mismatched, gaps = check_samples(documents(), address, BOARD_SEEDS[0], resets=True)
    save_documents("outbox")
    checks.record("faults: documents have no duplicates, no reordering, values as sent",
                  count > 0 and not duplicates and not reordered and not mismatched,
                  f"{count} samples, {duplicates} duplicated, {reordered} out of order, {mismatched} differ; "
                  f"gaps (first index, missing): {gaps}")
    gateway.stop()
    boards.stop()


def group_restarts(checks):
    """bluetoothd restarted RESTARTS times (default 8) under a connected board, nothing else:
    how long the link takes to come back after each, with the gateway's discovery calls, the
    adapters' Powered/Discovering changes and org.bluez's owner changes in
    results/restarts-bus.log (dbus-monitor as root) to tell who waited."""
    for name in ("hci0", "hci1"):
        power(name)
    boards = Boards(["hci1"], "--no-device-information", model="metamotion-r")
    address = boards.addresses[0]
    gateway = Gateway("restarts", f'addresses = ["{address}"]')
    if not gateway.wait_connected(address, 90):
        checks.record("restarts: board connected before the restarts", False, f"{gateway.board(address)}")
        return
    monitor = subprocess.Popen(["stdbuf", "-oL", "dbus-monitor", "--system",
                                "type='method_call',interface='org.bluez.Adapter1'",
                                "type='method_call',interface='org.bluez.LEAdvertisingManager1'",
                                "type='method_call',interface='org.bluez.GattManager1'",
                                "type='method_call',interface='org.bluez.Device1'",
                                "type='error'",
                                "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',"
                                "arg0='org.bluez.Adapter1'",
                                "type='signal',member='NameOwnerChanged',arg0='org.bluez'"],
                               stdout=open(os.path.join(RESULTS, "restarts-bus.log"), "w"), stderr=subprocess.STDOUT)
    backs = []
    for attempt in range(int(os.environ.get("RESTARTS", "8"))):
        time.sleep(3)
        t0 = time.time()
        log(f"restart {attempt + 1}")
        restart_bluetoothd(("hci0", "hci1"))
        wait_link(address, False, 15, board_since=t0)
        back = wait_link(address, True, 60)
        total = time.time() - t0
        bluetoothd_survived(checks, f"restart {attempt + 1}", ("hci0", "hci1"))
        backs.append(total if back is not None else None)
        log(f"restart {attempt + 1}: link back {total:.1f} s after the restart began" if back is not None else
            f"restart {attempt + 1}: link not back within 60 s")
    monitor.terminate()
    monitor.wait()
    shown = ", ".join("never" if value is None else f"{value:.1f}" for value in backs)
    checks.record("restarts: the link came back after every bluetoothd restart", all(value is not None for value in backs),
                  f"link back after each restart (s, from SIGTERM to the old bluetoothd): {shown}")
    gateway.stop()
    boards.stop()


def backfilled_so_far(gateway, address):
    """The status's gyroSamplesBackfilled of the board (0 before any)."""
    b = gateway.board(address)
    return (b or {}).get("gyroSamplesBackfilled") or 0


def wait_backfill_settled(gateway, address, since_count, timeout):
    """After a gap: seconds until the status shows samples backfilled beyond `since_count` and
    no download under way any more, with the count unchanged for 2 s (None: not within
    `timeout`), and the samples backfilled meanwhile."""
    t0 = time.time()
    last, stable_since = None, None
    while time.time() - t0 < timeout:
        b = gateway.board(address) or {}
        count = b.get("gyroSamplesBackfilled") or 0
        downloading = "downloading" in str(b.get("flashLog") or "")
        if count != last:
            last, stable_since = count, time.time()
        elif count > since_count and not downloading and time.time() - stable_since >= 2:
            return stable_since - t0, count - since_count
        time.sleep(0.25)
    return None, (last or 0) - since_count


def group_backfill(checks):
    """Issue 21 through the real stack: one board with `[boards] backfill = true` (it logs its
    gyro to flash while streaming, metawear-logging.md) at 100 Hz, a session with faults: the
    board disconnects; goes silent until the link drops; is out of range for ~8 s (remove,
    restore); bluetoothd restarted; then the stop. Every gap's samples come back from the log
    (2 notifications per entry pair through bluetoothd's AcquireNotify socket, or its
    PropertiesChanged signals with BACKFILL_NOTIFICATIONS=start-notify). The documents are
    checked sample by sample against the board model's signal: no index missing, no
    duplicates, no reordering, values as sent, and every sample the board never sent over the
    link present and marked `backfilled`."""
    for name in ("hci0", "hci1"):
        power(name)
    boards = Boards(["hci1"], model="metamotion-r")
    address = boards.addresses[0]
    # [boards] notifications: "acquire" (the default) or "start-notify".
    path = os.environ.get("BACKFILL_NOTIFICATIONS", "acquire")
    # BACKFILL_READOUT_RATE: a cap on the board's readout pace, notifications/s. Unless set it
    # reads out as fast as bluetoothd takes its notifications, as a real board's goes as fast as
    # its link carries (the mwsim bench measured 3,600 entries/s through mwgated at 10,000/s).
    rate = os.environ.get("BACKFILL_READOUT_RATE")
    if rate:
        boards.command(0, f"readout-rate {rate}")
        path += f", readout {rate}/s"
    gateway = Gateway("backfill", f'addresses = ["{address}"]\nbackfill = true\n'
                                  f'notifications = "{os.environ.get("BACKFILL_NOTIFICATIONS", "acquire")}"')
    if not gateway.wait_connected(address, 120):
        checks.record("backfill: board connected", False, f"{gateway.board(address)}")
        return
    started = gateway.ctl("session", "start")
    b = gateway.wait_streaming(address, 60)
    logging = wait_for("flash logging", lambda: str((gateway.board(address) or {}).get("flashLog") or "")
                       .startswith("logging"), 30)
    checks.record(f"backfill ({path}): the board streams and logs to its flash", bool(b) and bool(logging),
                  f"session start {started.returncode} {started.stderr.strip()}; flash log: "
                  f"{(gateway.board(address) or {}).get('flashLog')!r}")
    if not b:
        return
    vm0, cpu0 = vm_cpu_times(), process_cpu(gateway.proc.pid)
    # The board's flash-log view every second (results/backfill-status.log): where a gap's
    # download stood when one is missing.
    polling = threading.Event()

    def poll_status():
        with open(os.path.join(RESULTS, "backfill-status.log"), "a") as out:
            while not polling.wait(1.0):
                b = gateway.board(address) or {}
                out.write(f"{time.time():.3f} {b.get('state')!r} streaming={b.get('streaming')} "
                          f"received={b.get('gyroSamplesReceived')} backfilled={b.get('gyroSamplesBackfilled')} "
                          f"flash={b.get('flashLog')!r} left={b.get('flashLogEntriesLeft')}\n")
                out.flush()
    poller = threading.Thread(target=poll_status, daemon=True)
    poller.start()
    time.sleep(5)
    faults = []  # (name, seconds to streaming, seconds to backfill settled, samples backfilled)

    def fault(name, action, back_within):
        before = backfilled_so_far(gateway, address)
        t0 = time.time()
        action()
        wait_link(address, False, 20, board_since=t0)
        back = wait_link(address, True, 40)
        if not bluetoothd_survived(checks, f"{name} (backfill)", ("hci0", "hci1")):
            back = wait_link(address, True, 40)
        streaming = time_to_streaming(gateway, address, back_within)
        since_fault = time.time() - t0
        settled, filled = wait_backfill_settled(gateway, address, before, 60)
        faults.append((name, None if streaming is None else round(since_fault, 2),
                       None if settled is None else round(settled, 2), filled))
        checks.record(f"backfill ({path}): {name}: streaming again, the gap downloaded",
                      streaming is not None and settled is not None,
                      f"link back after {seconds_or_never(back)}, streaming {since_fault:.1f} s after the fault; "
                      f"{filled} samples backfilled, the download done {seconds_or_never(settled)} after streaming again"
                      + ("" if settled is not None else f" (flash log: {(gateway.board(address) or {}).get('flashLog')!r})")
                      if streaming is not None else
                      f"not streaming within {back_within} s of the link coming back ({gateway.board(address)})")
        time.sleep(2)

    fault("the board disconnects", lambda: boards.command(0, "disconnect"), 30)
    fault("the board goes silent until the link drops", lambda: boards.command(0, "silence 4"), 30)

    # BACKFILL_AWAY_SECONDS: how long the board is out of range (8 s unless set).
    away = float(os.environ.get("BACKFILL_AWAY_SECONDS", "8"))

    def out_of_range():
        boards.command(0, "remove")
        wait_link(address, False, 15)
        time.sleep(away)
        boards.command(0, "restore")
    fault(f"out of range for {away:.0f} s", out_of_range, 60)
    fault("bluetoothd restarted", lambda: restart_bluetoothd(("hci0", "hci1")), 40)
    time.sleep(3)
    cpu1, vm1 = process_cpu(gateway.proc.pid), vm_cpu_times()
    stopped = gateway.ctl("session", "stop")
    polling.set()
    poller.join(5)
    status = gateway.board(address) or {}
    backfilled = status.get("gyroSamplesBackfilled") or 0
    checks.metric(f"backfill ({path}): VM CPUs busy over the session, %", vm_busy_percent(vm0, vm1))
    checks.metric(f"backfill ({path}): mwgated CPU s over the session", round(cpu1 - cpu0, 2))
    checks.metric(f"backfill ({path}): samples backfilled (status)", backfilled)
    checks.metric(f"backfill ({path}): per fault (name, streaming s, download done after s, backfilled)", faults)
    # The stop waits for no download (a survey waits up to 15 s for one): give the documents time.
    wait_for("documents", lambda: documents(), 30)
    time.sleep(5)
    gateway.stop()
    bluetoothd_survived(checks, "mwgated's stop (backfill)", ("hci0", "hci1"))
    boards.stop()
    runs = sent_runs("hci1") or []
    docs = documents()
    save_documents("outbox")
    report = check_documents(docs, address, BOARD_SEEDS[0], sent=[(first, last) for first, last, _, _ in runs])
    if report["first_out_of_order"]:
        log(f"{address}: first sample out of order: {report['first_out_of_order']}")
    # Issue 18 defect 6: with backfill each false mark also holds the points after it for a
    # download of the log since its last trim.
    checks.metric(f"backfill ({path}): gap marks where no sample is missing (marks, samples they claim)",
                  [report["false_marks"], report["false_marked_samples"]])
    checks.record(f"backfill ({path}): no gap mark where no sample is missing", not report["false_marks"],
                  false_marks_message(report, address)
                  or f"{report['count']} samples, none marked missing where nothing is")
    with open(os.path.join(RESULTS, "mwsim.log")) as f:
        dropped = [line.strip() for line in f if "notification(s) dropped" in line]
    checks.metric(f"backfill ({path}): the board's readout pace, entries/s (overall, per readout)", readout_pace())
    missing = sum(n for _, n in report["gaps"])
    checks.record(f"backfill ({path}): documents sample by sample, no index missing",
                  report["count"] > 0 and report["sessions"] == 1 and not report["gaps"] and not report["duplicates"]
                  and not report["reordered"] and not report["time_backwards"] and not report["mismatched"],
                  f"{report['count']} samples in {report['sessions']} session(s), {missing} missing in gaps "
                  f"{report['gaps'][:5]}{'...' if len(report['gaps']) > 5 else ''}, {report['duplicates']} duplicated, "
                  f"{report['reordered']} out of order, {report['time_backwards']} times going back, "
                  f"{report['mismatched']} differ from the model; session stop {stopped.returncode} "
                  f"{stopped.stderr.strip()}; board's notifications bluetoothd did not take: {dropped or 'none'}")
    checks.record(f"backfill ({path}): what the board never sent is there, marked backfilled",
                  runs and report["backfilled"] > 0 and not report["unsent_unmarked"],
                  f"{report['backfilled']} points marked backfilled (status: {backfilled}), "
                  f"{report['sent_backfilled']} of them sent by the board but lost on the way; "
                  f"{report['unsent_unmarked']} points the board never sent without the mark "
                  f"{report['unsent_unmarked_first']}; the board sent {len(runs)} runs")


def link_closed_and_sensor_stopped(address, since):
    """After mwgated exited: seconds from `since` (the signal) until the link was down, whether
    the board says its gyro stopped, and the evidence. The gateway's adapter is polled only from
    the exit on (a GetManagedObjects every 0.1 s or slower on the VM's CPUs), so its view alone
    is never earlier than the exit plus a poll: once it sees the link down, the board's own log
    of its link's end (the same virtual air) dates it when that came first."""
    waited_from = time.time()
    down = wait_link(address, False, 5)
    polled = None if down is None else waited_from - since + down
    with open(os.path.join(RESULTS, "mwsim.log")) as f:
        ends = [line for line in f if ("link closed; gyro sampling" in line or "link down from" in line)
                and float(line.split()[0]) >= since]
    # "link closed; gyro sampling" is the board's session ending; a link that ended before the
    # board had one (no GATT session yet) shows only its bluetoothd's "link down".
    lines = [line for line in ends if "link closed; gyro sampling" in line]
    board_end = float(ends[0].split()[0]) - since if ends else None
    closed = polled if polled is None or board_end is None else min(polled, board_end)
    # "link closed; gyro sampling: no; flash logging: no" may go on ("; log readout ended"):
    # the word after each colon decides. A board that does not say its flash log's state (an
    # mwsim older than the word) counts as stopped on its gyro's alone.
    stopped = bool(lines) and re.search(r"gyro sampling: no\b", lines[-1]) is not None \
        and re.search(r"flash logging: yes\b", lines[-1]) is None
    evidence = (lines[-1].strip() if lines else "no link-closed line from the board") + (
        f"; link down in the board's log {board_end:.2f} s, in the gateway's view {polled:.2f} s"
        if polled is not None and board_end is not None else "")
    return closed, stopped, evidence


def shutdown_timeline(gateway_name, since):
    """Where a SIGTERM's time went, from mwgated's log (seconds after `since`, the signal):
    the signal seen, every board's stop commands out and `Disconnect` asked (the other
    services begin stopping then), the pipeline's taking a board's stop (its last samples handed on), the
    boards' stop done (links released, client closed), the boards' last samples in the
    pipeline, the session sealed, every service stopped, the process's last line."""
    marks = {"signal seen": "Signal caught", "links' end asked": "every board's link end asked",
             "board's stop taken": ": stopped", "boards stopped": "boards stopped",
             "last samples in": "the boards' last samples were in", "sealed": "shutdown: session",
             "services stopped": "services stopped together", "last line": "<5>stopped"}
    found = {}
    with open(os.path.join(RESULTS, f"mwgated-{gateway_name}.log")) as f:
        for line in f:
            at = float(line.split(" ", 1)[0])
            if at < since:
                continue
            for name, marker in marks.items():
                if marker in line and name not in found:
                    found[name] = at - since
    return ", ".join(f"{name} {found[name]:.2f} s" for name in marks if name in found) or "no shutdown lines"


# bluetoothd 5.66 ends a link on `Device1.Disconnect` only from its DISCONNECT_TIMER (2 s,
# src/device.c device_request_disconnect -> disconnect_all), armed with timeout_add_seconds: a
# GLib seconds timeout, whose expiry GLib rounds to a whole second (gmain.c
# g_timeout_set_expiration: up when 250 ms or more past one), so it fires 1.75-2.75 s after
# the call arrives.
DISCONNECT_TIMER_LATEST = 2.75
# Beyond that timer: bluetoothd taking the call off the bus, the management Disconnect through
# btvirt to the board's controller and the board's bluetoothd reporting it, all on the VM's two
# busy vCPUs (measured: docs/bluez-vm.md, "The stop group's first connection").
DISCONNECT_MARGIN = 0.75
# How soon after the signal mwgated must have asked for Disconnect when bluetoothd has no GATT
# objects for the board (its stop then has nothing to write, Disconnect is all it can do).
DISCONNECT_ASKED_WITHIN = 1.0


def device_path(address, adapter="hci0"):
    return f"/org/bluez/{adapter}/dev_{address.upper().replace(':', '_')}"


def command_characteristic_exported(address):
    """Whether bluetoothd on the gateway's adapter exports the board's command characteristic,
    the one a stop writes `FE 06` (the board ends the link itself) to."""
    prefix = device_path(address) + "/"
    return any(str(path).startswith(prefix) and str(interfaces.get("org.bluez.GattCharacteristic1", {}).get("UUID", ""))
               == METAWEAR_COMMAND for path, interfaces in bluez_objects().items())


def monitor_device_calls(path):
    """dbus-monitor as root: every Device1 method call on the gateway's adapter (Connect,
    Disconnect), every AcquireNotify and WriteValue there, with its time. Few messages (the
    notifications come through acquired sockets), so the monitor keeps up under TCG. A second
    monitor (monitor_bluez_answers) has bluetoothd's answers."""
    return subprocess.Popen(["stdbuf", "-oL", "dbus-monitor", "--system",
                             "type='method_call',interface='org.bluez.Device1',path_namespace='/org/bluez/hci0'",
                             "type='method_call',interface='org.bluez.GattCharacteristic1',member='AcquireNotify',"
                             "path_namespace='/org/bluez/hci0'",
                             "type='method_call',interface='org.bluez.GattCharacteristic1',member='WriteValue',"
                             "path_namespace='/org/bluez/hci0'"],
                            stdout=open(path, "w"), stderr=subprocess.STDOUT)


def monitor_bluez_answers(path):
    """dbus-monitor --profile as root: bluetoothd's answers (one line each, no body: among them
    the large GetManagedObjects replies the scenario's polls get, whose bodies made a monitor
    that printed them fall behind and lose the calls above), for stop_bus_timeline."""
    return subprocess.Popen(["stdbuf", "-oL", "dbus-monitor", "--system", "--profile",
                             "type='method_return',sender='org.bluez'", "type='error',sender='org.bluez'"],
                            stdout=open(path, "w"), stderr=subprocess.STDOUT)


def parse_profile_answers(path):
    """(destination, reply_serial) -> time of bluetoothd's answer, and whether it was an error,
    from dbus-monitor --profile lines (`mr|err <tab> time <tab> serial <tab> sender <tab>
    destination <tab> reply serial [<tab> error name]`)."""
    answers = {}
    with open(path, errors="replace") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 6 or fields[0] not in ("mr", "err"):
                continue
            try:
                answers[(fields[4], int(fields[5]))] = (float(fields[1]), fields[0] == "err")
            except ValueError:
                continue
    return answers


def stop_bus_timeline(monitor_log, address, since, answers_log=None):
    """A stop's calls to bluetoothd for the board, from the monitors (seconds after `since`, the
    signal): each WriteValue (its bytes) and the Disconnect, sent -> answered."""
    messages = parse_monitor(monitor_log)
    answers = parse_profile_answers(answers_log or os.path.join(os.path.dirname(monitor_log), "bluez-answers.log"))
    device = device_path(address)
    steps = []
    for m in messages:
        if m["kind"] != "method call" or m["time"] < since or not (m["path"] or "").startswith(device) \
                or m["member"] not in ("WriteValue", "Disconnect"):
            continue
        answer = answers.get((m["sender"], m["serial"]))
        what = " ".join(m["written"] or []) if m["member"] == "WriteValue" else "Disconnect"
        answered = "unanswered" if answer is None else f"{answer[0] - since:.2f}{' (error)' if answer[1] else ''}"
        steps.append(f"{what} {m['time'] - since:.2f}->{answered}")
    return "; ".join(steps) or "no call seen"


def disconnect_asked(monitor_log, address, since):
    """Seconds from `since` to the first Device1.Disconnect of the board seen by the monitor."""
    calls = [m for m in parse_monitor(monitor_log) if m["kind"] == "method call" and m["member"] == "Disconnect"
             and m["path"] == device_path(address) and m["time"] >= since]
    return calls[0]["time"] - since if calls else None


def make_known_to_gateway_adapter(address, timeout=30):
    """Discovers the board on the gateway's adapter (hci0) from the scenario's own bus
    connection, so bluetoothd keeps a device object for it: a gateway started next calls
    `Device1.Connect` at once instead of scanning. True when the object appeared."""
    adapter = dbus.Interface(dbus.SystemBus().get_object("org.bluez", "/org/bluez/hci0"), "org.bluez.Adapter1")
    # LE only, as mwgated scans (BlueZClient): the VM's controllers are LE controllers.
    adapter.SetDiscoveryFilter(dbus.Dictionary({"Transport": "le", "DuplicateData": False}, signature="sv"))
    adapter.StartDiscovery()
    try:
        return bool(wait_for(f"{address} known on hci0", lambda: any(
            str(i.get("org.bluez.Device1", {}).get("Address", "")).upper() == address.upper()
            and str(path).startswith("/org/bluez/hci0/") for path, i in bluez_objects().items()), timeout, interval=0.2))
    finally:
        try:
            adapter.StopDiscovery()
        except dbus.DBusException:
            pass


def connect_called(monitor_log, address, since):
    """Whether the monitor saw a `Device1.Connect` of the board at or after `since`."""
    return any(m["kind"] == "method call" and m["member"] == "Connect" and m["path"] == device_path(address)
               and m["time"] >= since for m in parse_monitor(monitor_log))


def sessions_between(docs, address, since, until):
    """The board's session ids whose first gyro point lies in [since, until) (epoch s)."""
    firsts = {}
    for d in docs:
        if str(d.get("board", "")).upper() != address.upper():
            continue
        for p in d.get("data", []):
            stamp = (p.get("gyroscope") or {}).get("timestamp")
            if stamp is not None:
                session = d.get("session_id", "")
                firsts[session] = min(firsts.get(session, stamp), stamp)
    return sorted(s for s, first in firsts.items() if since * 1000 <= first < until * 1000)


def marked_missing(docs, address, session_id):
    """Points of the board's session that carry a gap mark (`missed_before` > 0)."""
    return sum(1 for d in docs if str(d.get("board", "")).upper() == address.upper() and d.get("session_id") == session_id
               for p in d.get("data", []) if p.get("gyroscope") and p.get("missed_before"))


# The board's readout pace in the stop group's readout moment, notifications/s (2 entries
# each): the board logs its gyro at 100 Hz (2 entries a sample, 100 notifications' worth a
# second), so at 200 a readout of the log since the session began takes about as long as the
# recording before the gap, and the gap's own entries come last: the readout is still under
# way seconds after it began, as a real board's is on a poor link. A real board reads out as
# fast as its link carries; the VM's link would finish in a fraction of a second.
STOP_READOUT_RATE = 200


def stop_during_readout(checks, boards, address, round_suffix, monitor_log):
    """SIGTERM while a gap readout of the board's flash log is under way (issue 18 §2.7): one
    board with `backfill = true` records (session mode always), then drops its link; once
    mwgated reads the gap back from the log (status `downloading`), SIGTERM. Checked: exit
    within 2 s, link closed within 2 s, the board says its gyro and its flash log are off; then
    a second mwgated on the same state fills the gap the stop left: the first session holds
    every sample once, in order, values as the model's, none marked missing."""
    label = f"SIGTERM during a flash-log readout{round_suffix}"
    wait_link(address, False, 10)
    name = "stop-readout" + round_suffix.replace(" (round ", "-").rstrip(")")
    config = f'addresses = ["{address}"]\nbackfill = true'
    boards.command(0, f"readout-rate {STOP_READOUT_RATE}")
    first = Gateway(name, config, session_mode="always")
    streaming = first.wait_streaming(address, 60)
    logging = wait_for("flash logging", lambda: str((first.board(address) or {}).get("flashLog") or "")
                       .startswith("logging"), 30)
    if not streaming or not logging:
        checks.record(f"{label}: exit within 2 s, link closed, sensors stopped", False,
                      f"the board never streamed and logged: {first.board(address)}")
        first.stop()
        return
    time.sleep(4)
    fault = boards.command(0, "disconnect")
    wait_link(address, False, 20, board_since=fault)
    reading = wait_for("the gap's readout under way", lambda: (lambda f: f if "downloading" in f else None)(
        str((first.board(address) or {}).get("flashLog") or "")), 60, interval=0.1)
    t0 = time.time()
    took = first.stop(grace=10)
    ended = getattr(first, "output_ended", None)
    closed, stopped, evidence = link_closed_and_sensor_stopped(address, t0)
    ok = reading is not None and took is not None and took <= 2.0 and closed is not None and closed <= 2.0 and stopped
    checks.record(f"{label}: exit within 2 s, link closed, sensors stopped", ok,
                  f"flash log when signalled: {reading!r}; exited after "
                  f"{f'{took:.2f} s' if took is not None else 'more than 10 s (killed)'}; link "
                  f"{f'closed {closed:.2f} s after the signal' if closed is not None else 'still up 5 s later'}; "
                  f"board: {evidence}; mwgated's log: {shutdown_timeline(name, t0)}"
                  + (f", output ended {ended - t0:.2f} s" if ended else "")
                  + f"; bus: {stop_bus_timeline(monitor_log, address, t0)}")
    bluetoothd_survived(checks, "the stop during a readout" + round_suffix, ["hci0", "hci1"])

    # The next run on the same state reads what the stop left on the board.
    boards.command(0, "readout-rate 10000")
    wait_link(address, False, 10)
    second = Gateway(name + "-next", config, session_mode="always")
    second.wait_streaming(address, 60)
    settled, filled = wait_backfill_settled(second, address, 0, 60)
    report, session, missing_marks = None, None, None
    deadline = time.time() + 20
    while True:  # the filled session's correction chunks reach the outbox through the sync
        docs = documents()
        sessions = sessions_between(docs, address, first.started, second.started)
        if len(sessions) == 1:
            session = sessions[0]
            report = check_documents(docs, address, BOARD_SEEDS[0], session_id=session)
            missing_marks = marked_missing(docs, address, session)
            if not report["gaps"] and not missing_marks or time.time() > deadline:
                break
        elif time.time() > deadline:
            break
        time.sleep(1)
    second.stop()
    save_documents("outbox-" + name)
    ok = report is not None and report["count"] > 0 and not report["gaps"] and not report["duplicates"] \
        and not report["reordered"] and not report["time_backwards"] and not report["mismatched"] \
        and not missing_marks and report["backfilled"] > 0
    checks.record(f"{label}: the next run fills the gap, every sample once, in order, none marked missing", ok,
                  f"the stopped session's documents: {sessions if session is None else session}: "
                  + (f"{report['count']} samples, {report['backfilled']} backfilled, {sum(n for _, n in report['gaps'])} "
                     f"missing in gaps {report['gaps'][:5]}, {report['duplicates']} duplicated, {report['reordered']} out "
                     f"of order, {report['time_backwards']} times going back, {report['mismatched']} differ from the "
                     f"model, {missing_marks} marked missing" if report else "none")
                  + f"; the next run backfilled {filled} (settled {seconds_or_never(settled)})")


def group_stop(checks):
    """(5) SIGTERM during connect, during the handshake, while recording and during a flash-log
    readout: exit within 2 s, sensors stopped and links closed. STOP_ROUNDS (default 1)
    repeats the moments.

    During connect: the board is out of range (it neither advertises nor answers), so
    mwgated's `Device1.Connect` is outstanding at the signal for as long as the test likes; the
    signal comes once the monitor saw that call. With the board in range the state lasted
    0.16-0.35 s in the VM (Connect to ServicesResolved), often over before the control API
    answered its first status, and a status poll every 0.25 s missed it in two rounds of three
    (session 21). The stop must cancel the pending connection: once the board is back in range
    no link may come up (bluetoothd keeps a pending LE connection until Disconnect, or its
    caller, cancels it).

    A stop while bluetoothd exports no GATT objects for the board yet (the first connection's
    link up at the controller, services not yet discovered) has no command characteristic to
    write `FE 06` to, so no client can end that link sooner than bluetoothd's DISCONNECT_TIMER.
    There the check holds mwgated to what it owns: the exit within 2 s, `Disconnect` asked
    within DISCONNECT_ASKED_WITHIN of the signal, and the link gone within the timer's latest
    expiry plus DISCONNECT_MARGIN of that call (docs/bluez-vm.md, "The stop group's first
    connection")."""
    for name in ("hci0", "hci1"):
        power(name)
    boards = Boards(["hci1"], model="metamotion-r")
    address = boards.addresses[0]
    monitor_log = os.path.join(RESULTS, "device-calls.log")
    monitor = monitor_device_calls(monitor_log)
    answers_monitor = monitor_bluez_answers(os.path.join(RESULTS, "bluez-answers.log"))
    rounds = int(os.environ.get("STOP_ROUNDS", "1"))
    # STOP_MOMENTS: some of the three moments only (e.g. "connect", to repeat the stops that
    # meet bluetoothd's connect race many times in one VM boot).
    # "acquire" (not among the default three): the signal as soon as mwgated called
    # AcquireNotify while still connecting; on a reconnect (rounds after the first: bluetoothd
    # keeps the board's GATT objects) bluetoothd answers it only once its GATT client is
    # ready, so the stop meets the call unanswered (docs/bluez-vm.md, "The stop group and
    # bluetoothd's acquired notifications").
    # "readout": stop_during_readout.
    moments = [m for m in (("connect", ("connecting",)), ("acquire", ("connecting",)),
                           ("handshake", ("handshaking", "configuring")), ("recording", ("streaming",)),
                           ("readout", ("streaming",)))
               if m[0] in os.environ.get("STOP_MOMENTS", "connect,handshake,recording,readout").split(",")]
    if any(moment == "connect" for moment, _ in moments):
        # The first round's connect too meets a board bluetoothd already knows (Connect, not a scan).
        make_known_to_gateway_adapter(address)
    for round_number in range(1, rounds + 1):
        for moment, wanted in moments:
            if moment == "readout":
                stop_during_readout(checks, boards, address, f" (round {round_number})" if rounds > 1 else "", monitor_log)
                continue
            wait_link(address, False, 10)
            if moment == "connect":
                boards.command(0, "remove")
            name = f"stop-{moment}" + (f"-{round_number}" if rounds > 1 else "")
            gateway = Gateway(name, f'addresses = ["{address}"]',
                              session_mode="always" if moment == "recording" else "manual")
            state = wait_for(f"state {wanted}", lambda: (lambda b: b["state"] if b and any(
                w in b["state"] for w in wanted) else None)(gateway.board(address)), 60, interval=0.25)
            if moment == "recording":
                time.sleep(3)
            if moment == "connect":
                started = gateway.started
                state = state if wait_for("mwgated's Connect", lambda: connect_called(monitor_log, address, started),
                                          30, interval=0.05) else None
            if moment == "acquire":
                started = gateway.started
                state = state if wait_for("mwgated's AcquireNotify", lambda: any(
                    m["member"] == "AcquireNotify" and m["time"] >= started for m in parse_monitor(monitor_log)),
                    60, interval=0.05) else None
            try:
                exported = command_characteristic_exported(address)
            except dbus.DBusException:
                exported = True  # unknown: hold the stop to the full check
            t0 = time.time()
            took = gateway.stop(grace=10)
            ended = getattr(gateway, "output_ended", None)
            closed, stopped, evidence = link_closed_and_sensor_stopped(address, t0)
            time.sleep(0.2)  # the monitor's line for a Disconnect sent just before the exit
            asked = disconnect_asked(monitor_log, address, t0)
            # A gateway that never reached the state measured nothing: no pass.
            exited = state is not None and took is not None and took <= 2.0
            if exported or closed is not None and closed <= 2.0:
                ok = exited and closed is not None and closed <= 2.0
                link = f"{f'closed {closed:.2f} s after the signal' if closed is not None else 'still up 5 s later'}"
            else:
                limit = None if asked is None else asked + DISCONNECT_TIMER_LATEST + DISCONNECT_MARGIN
                ok = exited and asked is not None and asked <= DISCONNECT_ASKED_WITHIN and \
                    closed is not None and closed <= limit
                link = (f"{f'closed {closed:.2f} s after the signal' if closed is not None else 'still up 5 s later'}"
                        f" (bluetoothd exported no GATT objects for the board at the signal, so no FE 06 could be "
                        f"written and only its 2 s DISCONNECT_TIMER ends the link; checked instead: Disconnect asked "
                        f"{f'{asked:.2f} s' if asked is not None else 'never (no call seen)'} after the signal "
                        f"(<= {DISCONNECT_ASKED_WITHIN} s), link gone within {DISCONNECT_TIMER_LATEST} + "
                        f"{DISCONNECT_MARGIN} s of it{f' (<= {limit:.2f} s)' if limit is not None else ''})")
            if moment == "recording":
                ok = ok and stopped
            if moment == "connect":
                # Back in range: a connection the stop left pending would come up now (the
                # board advertises every second).
                back = boards.command(0, "restore")
                relinked = wait_link(address, True, 5)
                linked_lines = board_log_times("hci1", "link up from", back)
                ok = ok and relinked is None and not linked_lines
                link += ("; no link within 5 s of the board's return" if relinked is None and not linked_lines else
                         f"; a link came up {relinked if relinked is not None else linked_lines[0] - back:.2f} s after "
                         f"the board's return (the Connect the stop left pending)")
            checks.record(f"SIGTERM during {moment}: exit within 2 s, link closed"
                          + (", sensors stopped" if moment == "recording" else "")
                          + (f" (round {round_number})" if rounds > 1 else ""), ok,
                          f"state when signalled: {state!r}; exited after "
                          f"{f'{took:.2f} s' if took is not None else 'more than 10 s (killed)'}; link {link}; "
                          f"Disconnect asked {f'{asked:.2f} s after the signal' if asked is not None else 'never'}; "
                          f"board: {evidence}; mwgated's log: {shutdown_timeline(name, t0)}"
                          + (f", output ended {ended - t0:.2f} s" if ended else "")
                          + f"; bus: {stop_bus_timeline(monitor_log, address, t0)}")
            # A bluetoothd that died in the stop is a failure of its own (and would fail every
            # later round); a new one lets them run.
            bluetoothd_survived(checks, f"the stop during {moment}" + (f" (round {round_number})" if rounds > 1 else ""),
                                ["hci0", "hci1"])
    monitor.terminate()
    answers_monitor.terminate()
    boards.stop()


def board_log_times(adapter, marker, since):
    """Wall-clock times of the board's log lines containing `marker` after `since`."""
    prefix = f"mwsim peripheral {adapter}: {marker}"
    with open(os.path.join(RESULTS, "mwsim.log")) as f:
        return [float(line.split()[0]) for line in f if prefix in line and float(line.split()[0]) >= since]


def process_named(name):
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() == name:
                        return int(pid)
            except OSError:
                pass
    return None


def measure_idle_notifications(checks, gateway, address, seconds):
    """Issue 19 part 2 in the VM: with no session recording the board keeps its link with its
    sensors off, so it sends nothing. Counted on the air as the host sees it: btmon, every ATT
    notification PDU the board's adapter sends for `seconds`, beside the gyro samples mwgated reports received.
    Goal 0 per minute (button events aside: none is pressed). Then, as a control that the
    counter sees notifications at all, 5 s of a session (which is stopped again)."""
    board = gateway.board(address) or {}
    path = os.path.join(RESULTS, "btmon-idle.log")
    monitor = subprocess.Popen(["btmon"], stdout=open(path, "w"), stderr=subprocess.STDOUT)
    time.sleep(1)  # btmon attached

    def notifications():
        """ATT notification PDUs the board's adapter (hci1) sent: bluetoothd 5.66 sends Handle
        Multiple Value Notifications (several values each) where the client supports them."""
        count, sent_by_board = 0, False
        with open(path, errors="replace") as f:
            for line in f:
                if not line.startswith(" "):
                    sent_by_board = line.startswith("< ACL Data TX") and "[hci1]" in line
                elif sent_by_board and line.strip().startswith(("ATT: Handle Value Notification",
                                                                "ATT: Handle Multiple Value Notification")):
                    count += 1
        return count

    n0 = samples_received(gateway, address)
    time.sleep(seconds)
    n1 = samples_received(gateway, address)
    idle = notifications()
    gateway.ctl("session", "start")
    streaming = gateway.wait_streaming(address, 60) is not None
    before = notifications()
    time.sleep(5)
    control = notifications() - before
    gateway.ctl("session", "stop")
    monitor.terminate()
    monitor.wait()
    per_minute = round(idle * 60 / seconds, 1)
    samples = (n1 or 0) - (n0 or 0)
    checks.metric("ATT notification PDUs per minute while idle (btmon, sent by the board)", per_minute)
    checks.metric("gyro samples received per minute while idle", round(samples * 60 / seconds, 1))
    checks.metric("ATT notification PDUs per minute while recording (btmon, control)", round(control * 12, 1))
    checks.record("bench: no notification while no session records (issue 19)",
                  streaming and control > 0 and idle == 0 and samples == 0 and board.get("state", "").startswith("idle"),
                  f"board state {board.get('state')!r}; {idle} ATT notifications in {seconds:.0f} s "
                  f"({per_minute}/min), {samples} gyro samples received; control: {control} notifications "
                  f"in 5 s of a session{'' if streaming else ' (the board did not stream)'}")


def group_idle(checks):
    """Only the idle measurement of group_bench (issue 19 part 2), for a quick run."""
    for name in ("hci0", "hci1"):
        power(name)
    boards = Boards(["hci1"], model="metamotion-r")
    address = boards.addresses[0]
    gateway = Gateway("idle", f'addresses = ["{address}"]')
    if gateway.wait_connected(address, 120):
        time.sleep(5)  # past the handshake and the first battery read
        measure_idle_notifications(checks, gateway, address, float(os.environ.get("IDLE_SECONDS", "60")))
    else:
        checks.record("idle: board connected", False, f"{gateway.board(address)}")
    gateway.stop()
    boards.stop()


def group_bench(checks):
    """Issue 18 part 3 in the VM (make bench: scripts/bench/bluez.sh; not part of make test).
    One board streaming 100 Hz through bluetoothd: mwgated's CPU per 1,000 samples while
    recording (bluetoothd's beside it: it serves both ends of the link); LINK_DROPS (20) link
    drops by the board, each timed from the board's side (link down -> link up, as bluetoothd
    reports Device1.Connected there) with the time from link back to streaming (status polled every 0.1 s),
    the samples missing in the documents against the time the link was down + 100 ms, and
    whether the gateway came back by itself; then bleak receiving the same stream with
    AcquireNotify and with StartNotify, its CPU per 1,000 notifications."""
    for name in ("hci0", "hci1"):
        power(name)
    boards = Boards(["hci1"], model="metamotion-r")
    address = boards.addresses[0]
    # [boards] notifications: "acquire" (the default) or "kept-session" (docs/operations.md).
    notifications = os.environ.get("BENCH_NOTIFICATIONS", "acquire")
    checks.metric("mwgated notification path", notifications)
    # BENCH_BACKFILL=1: `[boards] backfill = true`, the board logs to flash and mwgated fills
    # each drop's gap from it (issue 21), so the documents' loss per drop is what that misses.
    backfill = os.environ.get("BENCH_BACKFILL", "") not in ("", "0")
    checks.metric("backfill", "on" if backfill else "off")
    # BENCH_READOUT_RATE: the board's readout pace, notifications/s (the model's 200 unless set).
    if os.environ.get("BENCH_READOUT_RATE"):
        boards.command(0, f"readout-rate {os.environ['BENCH_READOUT_RATE']}")
        checks.metric("board's readout pace, notifications/s", int(os.environ["BENCH_READOUT_RATE"]))
    gateway = Gateway("bench", f'addresses = ["{address}"]\nnotifications = "{notifications}"\n'
                               f'backfill = {"true" if backfill else "false"}')
    if not gateway.wait_connected(address, 120):
        checks.record("bench: board connected", False, f"{gateway.board(address)}")
        return
    time.sleep(5)  # past the handshake and the first battery read
    measure_idle_notifications(checks, gateway, address, float(os.environ.get("IDLE_SECONDS", "60")))
    gateway.ctl("session", "start")
    if not gateway.wait_streaming(address, 60):
        checks.record("bench: board streaming", False, f"{gateway.board(address)}")
        return
    time.sleep(2)
    seconds = float(os.environ.get("BENCH_SECONDS", "30"))
    bluetoothd = process_named("bluetoothd")
    # The system bus routes every StartNotify notification (a signal each), none on AcquireNotify.
    bus = process_named("dbus-daemon")
    cpu0, bt0, bus0, n0, vm0 = (process_cpu(gateway.proc.pid), process_cpu(bluetoothd), process_cpu(bus),
                                samples_received(gateway, address), vm_cpu_times())
    time.sleep(seconds)
    cpu1, bt1, bus1, n1, vm1 = (process_cpu(gateway.proc.pid), process_cpu(bluetoothd), process_cpu(bus),
                                samples_received(gateway, address), vm_cpu_times())
    checks.metric("VM CPUs busy while measured, %", vm_busy_percent(vm0, vm1))
    received = (n1 or 0) - (n0 or 0)
    thousands = max(1, received) / 1000
    checks.metric("samples received while measured", received)
    checks.metric("mwgated CPU ms per 1000 samples (recording, AcquireNotify)", round(1000 * (cpu1 - cpu0) / thousands, 1))
    checks.metric("bluetoothd CPU ms per 1000 samples (both ends of the link)", round(1000 * (bt1 - bt0) / thousands, 1))
    checks.metric("dbus-daemon CPU ms per 1000 samples", round(1000 * (bus1 - bus0) / thousands, 1))

    drops = int(os.environ.get("LINK_DROPS", "20"))
    # The drops' whole span (and the measure after them): mwgated's CPU over every sample it
    # took in, streamed or downloaded from the log.
    span0 = (process_cpu(gateway.proc.pid), samples_received(gateway, address) or 0, backfilled_so_far(gateway, address))
    timings = []  # (link down seconds, link back -> streaming seconds or None, the status's sample time or None)
    commanded = []  # when each drop was asked of the board
    # Where a reconnect's time goes: bluetoothd's signals and the gateway's calls on the bus,
    # with times (dbus-monitor as root; into the VM's memory, copied out at the end).
    monitor = subprocess.Popen(["dbus-monitor", "--system", "type='signal',sender='org.bluez',member='PropertiesChanged'",
                                "type='method_call',destination='org.bluez'", "type='method_return'",
                                # The bench's own status polls, to tell a late answer from a late sample.
                                "type='method_call',interface='io.mwgate.Gateway1',member='GetStatus'",
                                "type='error'"], stdout=open("/run/mwgate-vm/bench-bus.log", "w"),
                               stderr=subprocess.STDOUT) if os.environ.get("BENCH_BUS_TRACE") else None
    # Who takes the VM's CPUs around each reconnect (MWGATE_VM_SAMPLE_PROCESSES=0.1).
    sampler = ProcessSampler(float(os.environ["SAMPLE_PROCESSES"])) if os.environ.get("SAMPLE_PROCESSES") else None
    for attempt in range(drops):
        sent = boards.command(0, "disconnect")
        commanded.append(sent)
        # Link back: bluetoothd's Connected=true on the board's side, or, when 5.66 never
        # signals it (the connect race, real-bluez-vm.md §1, seen on the board's side too),
        # the gateway enabling notifications, which needs the link.
        back = wait_for("link back", lambda: sorted(board_log_times("hci1", "link up from", sent)
                                                    + board_log_times("hci1", "notifications on", sent)), 60,
                        interval=0.2)
        # bluetoothd's Connected=false on the board's side: when the link really went down
        # (the board's Disconnect call may return before or after it).
        closed = board_log_times("hci1", "link down from", sent)
        before = samples_received(gateway, address) or 0
        streaming_at = None
        deadline = time.time() + 30
        while time.time() < deadline:
            b = gateway.board(address)
            # A sample that arrived after the link came back (ones drained from before the
            # drop can still be counted after it).
            if b and b["streaming"] and b["gyroSamplesReceived"] > before and b.get("lastSampleAt") \
                    and (not back or b["lastSampleAt"] > back[0]):
                streaming_at = b["lastSampleAt"]
                break
            time.sleep(0.1)
        down = (back[0] - closed[0]) if back and closed else None
        to_streaming = (streaming_at - back[0]) if back and streaming_at else None
        log(f"drop {attempt + 1}: link down {down}, link back -> streaming {to_streaming}")
        timings.append((down, to_streaming, streaming_at))
        time.sleep(2)
    if monitor:
        monitor.terminate()
        monitor.wait()
        subprocess.run(["cp", "/run/mwgate-vm/bench-bus.log", RESULTS])
    if sampler:
        sampler.stop()
    # The same CPU measure after the drops (the links reopened since).
    time.sleep(2)
    cpu0, n0 = process_cpu(gateway.proc.pid), samples_received(gateway, address)
    time.sleep(seconds)
    cpu1, n1 = process_cpu(gateway.proc.pid), samples_received(gateway, address)
    checks.metric("mwgated CPU ms per 1000 samples (recording, after the drops)",
                  round(1000 * (cpu1 - cpu0) / (max(1, (n1 or 0) - (n0 or 0)) / 1000), 1))
    taken = (n1 or 0) - span0[1] + backfilled_so_far(gateway, address) - span0[2]
    checks.metric("mwgated CPU ms per 1000 samples (the drops and after, streamed + backfilled)",
                  round(1000 * (cpu1 - span0[0]) / (max(1, taken) / 1000), 1))
    if backfill:
        checks.metric("samples backfilled (status)", backfilled_so_far(gateway, address))
        checks.metric("flash log at the end of the drops", (gateway.board(address) or {}).get("flashLog"))
    stopped = gateway.ctl("session", "stop")
    if stopped.returncode != 0:
        checks.record("bench: mwctl session stop", False, f"status {stopped.returncode}: {stopped.stderr.strip()}")
    wait_for("documents", lambda: documents(), 30)
    time.sleep(3)
    count, duplicates, reordered, mismatched, gaps = check_samples(documents(), address, BOARD_SEEDS[0])
    save_documents("outbox")
    unaided = [t for t in timings if t[1] is not None]
    checks.record(f"bench: {drops} link drops, every reconnect without an operator", len(unaided) == drops,
                  f"{len(unaided)} of {drops} streaming again within 30 s of the link coming back")
    to_streaming = sorted(t[1] for t in unaided)
    if to_streaming:
        checks.metric("link back -> streaming, median s", round(to_streaming[len(to_streaming) // 2], 2))
        checks.metric("link back -> streaming, worst s", round(to_streaming[-1], 2))
        checks.record("bench: streaming within 1 s of the link coming back", to_streaming[-1] <= 1.0,
                      f"median {to_streaming[len(to_streaming) // 2]:.2f} s, worst {to_streaming[-1]:.2f} s "
                      f"(status polled every 0.1 s)")
    checks.record("bench: documents without duplicates, reordering or changed values",
                  count > 0 and not duplicates and not reordered and not mismatched,
                  f"{count} samples, {duplicates} duplicated, {reordered} out of order, {mismatched} differ")
    gateway.stop()
    time.sleep(1)
    bluetoothd_survived(checks, "mwgated's stop", ("hci0", "hci1"))
    per_drop = drop_breakdown(commanded, timings)

    for path in ("acquire", "start"):
        for attempt in range(2):  # a connect right after mwgated's stop found no services once
            probe = subprocess.run(["python3", "/scenario/bleak_probe.py", address, str(seconds), path],
                                   capture_output=True, text=True, timeout=180)
            log(f"bleak {path}: {probe.stdout.strip()} {probe.stderr.strip()[-300:]}")
            if probe.returncode == 0:
                break
            time.sleep(3)
        try:
            result = json.loads(probe.stdout.strip().splitlines()[-1])
            name = "AcquireNotify" if path == "acquire" else "StartNotify"
            checks.metric(f"bleak CPU ms per 1000 notifications ({name})", round(result["cpu_ms_per_1000"], 1))
            checks.metric(f"bleak notifications received in {seconds:.0f} s ({name})", result["notifications"])
        except (ValueError, IndexError, KeyError):
            checks.record(f"bench: bleak {path}", False, f"no result: {probe.stderr.strip()[-300:]}")
    boards.stop()
    report_drops(checks, per_drop, gaps, sent_runs("hci1"),
                 gap_after=check_documents(documents(), address, BOARD_SEEDS[0])["gap_after"])


def drop_breakdown(commanded, timings):
    """Per link drop, from the board's log: when the link went down and came back as
    bluetoothd on the board's side saw it, and when the gateway had notifications on again (the
    board sends nothing before: its CCCD is written anew on every link); beside it the gateway's
    first sample after the link was back (status)."""
    rows = []
    for index, sent in enumerate(commanded):
        until = commanded[index + 1] if index + 1 < len(commanded) else float("inf")

        def first(marker, after):
            times = [t for t in board_log_times("hci1", marker, after) if t < until]
            return times[0] if times else None
        down = first("link down from", sent)
        up = first("link up from", sent)
        on = first("notifications on", up if up else sent)
        rows.append({"drop": index + 1, "commanded": sent, "until": until, "up": up,
                     "down s": round(up - down, 3) if up and down else None,
                     "link up -> notifications on s": round(on - up, 3) if on and up else None,
                     "link up -> first sample s": round(timings[index][1], 3) if timings[index][1] is not None else None,
                     # Wall-clock times (the VM's, as the bus trace's), for bus_timeline.py.
                     "link up at": up, "notifications on at": on, "first sample at": timings[index][2]})
    return rows


def readout_pace(page_entries=512):
    """The board's flash-log readout pace from its own log (mwsim.log's `log command` lines):
    per readout (`0B 06`), the pages confirmed (`0B 0E`, `page_entries` each) over the time from
    the readout's start to its last confirm; [overall entries/s, [per readout: pages, entries/s]].
    A readout with fewer than 2 pages confirmed is left out (no pace to speak of)."""
    readouts = []
    with open(os.path.join(RESULTS, "mwsim.log")) as f:
        for line in f:
            if "log command 0b06" in line:
                readouts.append([float(line.split()[0]), []])
            elif "log command 0b0e" in line and readouts:
                readouts[-1][1].append(float(line.split()[0]))
    paced = [(len(confirms), len(confirms) * page_entries / (confirms[-1] - start))
             for start, confirms in readouts if len(confirms) >= 2 and confirms[-1] > start]
    entries = sum(pages * page_entries for pages, _ in paced)
    seconds = sum(pages * page_entries / pace for pages, pace in paced)
    return [round(entries / seconds) if seconds else None, [(pages, round(pace)) for pages, pace in paced]]


def sent_runs(adapter):
    """The runs of gyro samples the board handed to bluetoothd, (first, last, start, end): 16-bit
    sample numbers and wall-clock seconds, from the summary mwsim logs when it stops."""
    prefix = f"mwsim peripheral {adapter}: stopped; sent gyro samples "
    with open(os.path.join(RESULTS, "mwsim.log")) as f:
        lines = [line.split(prefix, 1)[1] for line in f if prefix in line]
    if not lines:
        return None
    # "first-last (count, start-end s)" per run (SentSampleLog.summary)
    return [(int(a), int(b), float(c), float(d))
            for a, b, c, d in re.findall(r"(\d+)-(\d+) \(\d+, ([\d.]+)-([\d.]+) s\)", lines[-1])]


def sample_time(x, runs):
    """When the board took sample `x` (16 bits): the board's clock runs on between runs, so
    from the end of the last run sent before it; a sample in that run's first half, from the
    run's start (a run's end can be far from its last sample's time: the bench's last run took
    4,815 samples in 61.6 s, which put a sample taken at its start 13.5 s late)."""
    before = [run for run in runs if (x - run[0]) & 0xFFFF < 0x8000]
    if not before:
        return None
    first, last, start, end = max(before, key=lambda run: run[2])
    into = (x - first) & 0xFFFF
    if into <= ((last - first) & 0xFFFF) / 2:
        return start + into / GYRO_RATE
    return end + (((x - last) & 0xFFFF) if (x - last) & 0xFFFF < 0x8000 else -((last - x) & 0xFFFF)) / GYRO_RATE


def report_drops(checks, rows, gaps, runs, gap_after=None):
    """Per drop: the samples missing in the documents around it, against the time the link was
    down + 100 ms, and how many of them the board did send (with the link up) without their
    reaching the documents. Each gap is placed by the time of the recorded point before it
    (`gap_after`, ms: when the stream broke, on the gateway's clock, which the drops' times
    share); without it, by when the board took its first missing sample, estimated from the runs
    it sent (their 100 Hz drifts against the VM's clock: in one run that estimate put 4 of 9
    gaps into the wrong drop's window)."""
    placed = {}
    unplaced = []
    for index, (start, count) in enumerate(gaps):
        broke = gap_after[index] if gap_after and index < len(gap_after) else None
        at = broke / 1000 if broke is not None else (sample_time(start & 0xFFFF, runs) if runs else None)
        row = next((r for r in rows if at is not None and r["commanded"] - 0.5 <= at < r["until"]), None)
        if row is None:
            unplaced.append((start, count))
        else:
            placed.setdefault(row["drop"], []).append((start, count))
    for row in rows:
        mine = placed.get(row["drop"], [])
        row["gaps"] = mine
        row["lost s"] = round(sum(n for _, n in mine) / GYRO_RATE, 2) if runs else None
        if runs is not None:
            missing = {(start + k) & 0xFFFF for start, count in mine for k in range(count)}
            row["sent, not delivered"] = sum(1 for x in missing
                                             if any((x - first) & 0xFFFF <= (last - first) & 0xFFFF for first, last, _, _ in runs))
            # The first sample recorded after the drop, by when the board took it: where the loss
            # really ended (the status poll above sees a sample only once the gateway counted it).
            if mine and row["up"]:
                start, count = max(mine, key=lambda gap: sample_time(gap[0] & 0xFFFF, runs) or 0)
                taken = sample_time((start + count) & 0xFFFF, runs)
                row["link up -> first recorded sample taken s"] = round(taken - row["up"], 3) if taken else None
        log(f"drop {row['drop']}: down {row['down s']} s, link up -> notifications on {row['link up -> notifications on s']} s, "
            f"-> first sample {row['link up -> first sample s']} s (taken by the board "
            f"{row.get('link up -> first recorded sample taken s', '?')} s after link up); lost {row['lost s']} s "
            f"({row.get('sent, not delivered', '?')} of them sent by the board), gaps {mine}")
        del row["commanded"], row["until"], row["up"]
    checks.metric("per drop", rows)
    subscribe = sorted(r["link up -> notifications on s"] for r in rows if r["link up -> notifications on s"] is not None)
    if subscribe:
        checks.metric("link up -> notifications on (board's side), median s", subscribe[len(subscribe) // 2])
        checks.metric("link up -> notifications on (board's side), worst s", subscribe[-1])
    taken = sorted(r["link up -> first recorded sample taken s"] for r in rows
                   if r.get("link up -> first recorded sample taken s") is not None)
    if taken:
        checks.metric("link up -> first recorded sample taken, median s", taken[len(taken) // 2])
        checks.record("bench: first recorded sample taken within 1 s of the link coming back (board's clock)",
                      len(taken) == len(rows) and taken[-1] <= 1.0,
                      f"{len(taken)} of {len(rows)} drops placed; median {taken[len(taken) // 2]:.2f} s, "
                      f"worst {taken[-1]:.2f} s")
    name = "bench: samples lost per link drop <= link down time + 100 ms"
    if runs is None or any(r["down s"] is None for r in rows):
        checks.record(name, False, f"cannot tell: sent runs {'missing' if runs is None else 'found'}, "
                                   f"link down times {[r['down s'] for r in rows]}")
        return
    over = [r for r in rows if r["lost s"] > r["down s"] + 0.1]
    checks.metric("samples lost per link drop, median", sorted(r["lost s"] for r in rows)[len(rows) // 2])
    checks.metric("link down per drop, median s", sorted(r["down s"] for r in rows)[len(rows) // 2])
    described = [f"{r['lost s']:.2f} s lost, {r['down s']:.2f} s down" for r in over[:5]]
    checks.record(name, not over and not unplaced,
                  f"{len(over)} of {len(rows)} drops lost more: {described}"
                  + (f"; gaps in the documents at no drop: {unplaced}" if unplaced else ""))


def monitor_bluez(path):
    """dbus-monitor as root (a bus monitor sees every message): GATT characteristic method
    calls (who called StartNotify/AcquireNotify/StopNotify), bluetoothd's PropertiesChanged on
    the gateway's adapter, and NameOwnerChanged (clients leaving)."""
    return subprocess.Popen(["dbus-monitor", "--system",
                             "type='method_call',interface='org.bluez.GattCharacteristic1'",
                             "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',arg0='org.bluez.GattCharacteristic1',"
                             "path_namespace='/org/bluez/hci0'",
                             "type='signal',member='NameOwnerChanged'"],
                            stdout=open(path, "w"), stderr=subprocess.STDOUT)


def parse_monitor(path):
    """The messages of a dbus-monitor log: dicts with kind, time, sender, serial, path, member
    and, for a characteristic Value change, its bytes (hex tokens)."""
    messages = []
    current = None
    in_value = False
    in_written = False
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith(("signal ", "method call ", "method return ", "error ")):
                fields = dict(part.split("=", 1) for part in line.replace(";", " ").split() if "=" in part)
                current = {"kind": line.split(" time=")[0], "time": float(fields.get("time", 0)),
                           "sender": fields.get("sender"), "serial": int(fields.get("serial", 0) or 0),
                           "destination": fields.get("destination"),
                           "reply_serial": int(fields.get("reply_serial", 0) or 0),
                           "path": fields.get("path"), "member": fields.get("member"), "bytes": None, "strings": [],
                           "written": None}
                messages.append(current)
                in_value = False
                in_written = False
            elif current is not None:
                if line.strip().startswith('string "'):
                    current["strings"].append(line.strip()[8:-1])
                # A WriteValue's bytes: the call's first byte array.
                if current["member"] == "WriteValue" and current["kind"] == "method call":
                    if current["written"] is None and "array of bytes" in line:
                        current["written"] = []
                        in_written = "[" in line and "]" not in line
                        if not in_written:  # dbus-monitor prints a printable array as a quoted string
                            current["written"] = [line.split("array of bytes", 1)[1].strip()]
                        continue
                    if in_written:
                        if "]" in line:
                            in_written = False
                        else:
                            current["written"] += line.split()
                if '"Value"' in line:
                    in_value = True
                    current["bytes"] = []
                elif in_value:
                    tokens = line.split()
                    if tokens and all(len(t) == 2 and all(c in "0123456789abcdef" for c in t) for t in tokens):
                        current["bytes"] += tokens
                    elif "]" in line and current["bytes"]:
                        in_value = False
    return messages


def value_runs(messages, path, since, until):
    """Lengths of the runs of Value signals on `path` among `messages[since:until]` (indices,
    in the order the monitor got them): signals that follow each other with consecutive
    serials and the same bytes form one run."""
    runs = []
    last = None
    for m in messages[since:until]:
        if m["kind"] != "signal" or m["member"] != "PropertiesChanged" or m["path"] != path or m["bytes"] is None:
            continue
        if last and m["serial"] == last["serial"] + 1 and m["bytes"] == last["bytes"] and m["sender"] == last["sender"]:
            runs[-1] += 1
        else:
            runs.append(1)
        last = m
    return runs


def describe_runs(runs):
    histogram = {}
    for length in runs:
        histogram[length] = histogram.get(length, 0) + 1
    if not runs:
        return "none seen by the monitor"
    return f"{sum(runs)} Value signals in {len(runs)} runs, run lengths {dict(sorted(histogram.items()))}"


def bus_names():
    bus = dbus.SystemBus()
    return [str(n) for n in bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                              "ListNames", "", [])]


def bus_owner_of_pid(pid):
    """The unique bus name of the connection process `pid` holds (None if none)."""
    bus = dbus.SystemBus()
    for name in bus_names():
        if not name.startswith(":"):
            continue
        try:
            if int(bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                     "GetConnectionUnixProcessID", "s", [name])) == pid:
                return name
        except dbus.DBusException:
            pass
    return None


def notify_path(address):
    for path, interfaces in bluez_objects().items():
        chrc = interfaces.get("org.bluez.GattCharacteristic1")
        if chrc and str(chrc["UUID"]) == METAWEAR_NOTIFY and str(path).startswith("/org/bluez/hci0/") \
                and address.upper().replace(":", "_") in str(path):
            return str(path)
    return None


def group_startnotify(checks):
    """(3) the StartNotify path beside another notify client, one board: what bluetoothd 5.66
    sends per notification (dbus-monitor), who holds notify sessions, and that mwgated records
    every sample once, while the other client holds its session and after it left."""
    seconds = float(os.environ.get("STARTNOTIFY_SECONDS", "12"))
    for name in ("hci0", "hci1"):
        power(name)
    boards = Boards(["hci1"], model="metamotion-r")
    address = boards.addresses[0]
    monitor_log = os.path.join(RESULTS, "dbus-monitor.log")
    monitor = monitor_bluez(monitor_log)
    observer = subprocess.Popen(["python3", "/scenario/notify_observer.py", address],
                                stdout=open(os.path.join(RESULTS, "observer.log"), "a"), stderr=subprocess.STDOUT)
    observed = wait_for("observer subscribed", lambda: os.path.exists("/tmp/observer-ready"), 120)
    gateway = Gateway("startnotify", f'addresses = ["{address}"]')
    if not gateway.wait_connected(address, 120):
        checks.record("startnotify: board connected", False, f"{gateway.board(address)}")
        return
    gateway.ctl("session", "start")
    streaming = gateway.wait_streaming(address, 30)
    # bluetoothd busy with 200 signals a second on a loaded TCG guest may not answer at once.
    state = wait_for("the notify state", lambda: notify_state(address), 60, interval=2)
    checks.record("StartNotify beside another client's notify session",
                  bool(observed) and bool(streaming) and state is not None and state[1] is False,
                  f"(Notifying, NotifyAcquired) = {state}, other client subscribed: {bool(observed)}, "
                  f"streaming: {bool(streaming)}")
    time.sleep(seconds)
    owner = bus_owner_of_pid(observer.pid)
    observer.terminate()
    observer.wait()
    time.sleep(1)
    log(f"other client (pid {observer.pid}, bus name {owner}) ended with status {observer.returncode}; "
        f"its bus name still on the bus: {owner in bus_names() if owner else 'unknown'}")
    time.sleep(seconds)
    gateway.ctl("session", "stop")
    monitor.terminate()
    monitor.wait()
    messages = parse_monitor(monitor_log)
    path = notify_path(address)
    callers = [(m["member"], m["sender"]) for m in messages
               if m["kind"] == "method call" and m["member"] in ("StartNotify", "AcquireNotify", "StopNotify")
               and m["path"] == path]
    # In the monitor's order (it may lag, and drops messages when it cannot keep up): from the
    # gateway's StartNotify to the other client's departure, and after it.
    start = next((i for i, m in enumerate(messages) if m["member"] == "StartNotify" and m["path"] == path
                  and m["sender"] != (owner or "")), 0)
    gone = next((i for i, m in enumerate(messages) if m["member"] == "NameOwnerChanged" and owner
                 and m["strings"] == [owner, owner, ""]), None)
    shared = value_runs(messages, path, start, gone if gone is not None else len(messages))
    alone = value_runs(messages, path, gone, len(messages)) if gone is not None else []
    log(f"notify calls on {path}: {callers}")
    log(f"while another client held a session: {describe_runs(shared)}")
    log(f"after it left: {describe_runs(alone)}")
    wait_for("documents", lambda: documents(), 30)
    time.sleep(3)
    count, duplicates, reordered, mismatched, gaps = check_samples(documents(), address, BOARD_SEEDS[0])
    save_documents("outbox")
    checks.record("StartNotify: every sample recorded once (another client's session, then alone)",
                  count > 0 and not duplicates and not reordered and not mismatched,
                  f"{count} samples, {duplicates} duplicated, {reordered} out of order, {mismatched} differ; "
                  f"bluetoothd sent, with the other client: {describe_runs(shared)}; alone: {describe_runs(alone)}; "
                  f"notify calls {callers}")
    gateway.stop()
    boards.stop()


GROUPS = {"discovery": group_discovery, "boards": group_boards, "session": group_session, "faults": group_faults,
          "stop": group_stop, "bench": group_bench, "startnotify": group_startnotify,
          "session-stack": group_session_stack, "idle": group_idle, "backfill": group_backfill,
          "restarts": group_restarts}


def main():
    group = sys.argv[1]
    checks = Checks(group)
    try:
        GROUPS[group](checks)
    except Exception as error:  # a broken scenario is a failed check, never a silent pass
        import traceback
        traceback.print_exc()
        checks.record(f"{group}: scenario ran to the end", False, f"{type(error).__name__}: {error}")


if __name__ == "__main__":
    main()
