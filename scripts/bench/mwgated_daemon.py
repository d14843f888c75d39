"""mwgated as a user runs it, for the benchmark drivers (endurance.py, backfill_daemon.py):
the environment the systemd unit gives it, start until READY=1, `mwctl --json` calls, the
simulator's control interface, and CPU read from /proc."""
import glob
import json
import os
import socket
import subprocess
import threading
import time


def environment(work, notify_path):
    """The unit's environment: state, runtime and configuration directories under WORK, the
    notify socket, WATCHDOG_USEC as WatchdogSec=30 gives it (the daemon feeds it at half that)."""
    env = dict(os.environ)
    env.update(NOTIFY_SOCKET=notify_path, WATCHDOG_USEC="30000000", STATE_DIRECTORY=os.path.join(work, "state"),
               RUNTIME_DIRECTORY=os.path.join(work, "run"), CONFIGURATION_DIRECTORY=os.path.join(work, "etc"))
    env.pop("JOURNAL_STREAM", None)
    return env


def wait_ready(sock, process, limit=60.0):
    """The monotonic time a datagram with READY=1 arrived on SOCK (None if PROCESS exits or
    LIMIT seconds pass first)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        sock.settimeout(0.2)
        try:
            message = sock.recv(4096).decode(errors="replace")
        except socket.timeout:
            if process.poll() is not None:
                return None
            continue
        if "READY=1" in message.split("\n"):
            return time.monotonic()
    return None


def mwctl_json(mwctl, *args, timeout=30):
    """`mwctl ARGS --json` decoded, or None when it failed or said nothing."""
    try:
        out = subprocess.run([mwctl, *args, "--json"], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else None


def schedstat_ns(pid):
    """Nanoseconds on a CPU of every live thread of PID (/proc/PID/task/*/schedstat)."""
    total = 0
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(f"{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            continue
    return total


def simulator(bus_address, method, signature="", *args):
    """Calls io.mwgate.Simulator1.METHOD on mwsim; its reply's data (busctl --json)."""
    command = ["busctl", f"--address={bus_address}", "--json=short", "call", "io.mwgate.Simulator",
               "/io/mwgate/Simulator1", "io.mwgate.Simulator1", method]
    if signature:
        command += [signature, *(str(a) for a in args)]
    out = subprocess.run(command, capture_output=True, text=True, timeout=30, check=True)
    return json.loads(out.stdout)["data"] if out.stdout.strip() else None


class Daemon:
    """mwgated with CONFIG, its log in WORK/LOG_NAME, the unit's environment; started by
    start(), which returns once it is ready (or exits the script with the log's tail)."""

    def __init__(self, mwgated, config, work, log_name="mwgated.log"):
        self.mwgated, self.config, self.work = mwgated, config, work
        self.log_path = os.path.join(work, log_name)
        self.notify_path = os.path.join(work, "notify.sock")
        self.process = None
        self.sock = None

    def start(self):
        if os.path.exists(self.notify_path):
            os.unlink(self.notify_path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.notify_path)
        self.process = subprocess.Popen([self.mwgated, "--config", self.config], env=environment(self.work, self.notify_path),
                                        stdout=subprocess.DEVNULL, stderr=open(self.log_path, "w"))
        if not wait_ready(self.sock, self.process):
            raise SystemExit(f"mwgated did not become ready:\n{self.log_tail()}")
        # systemd reads every notification; a socket nobody reads fills after 10 datagrams
        # (net.unix.max_dgram_qlen), and an mwgated that waited in sendto then hung (issue 21).
        threading.Thread(target=self._drain_notifications, daemon=True).start()
        return self

    def _drain_notifications(self):
        self.sock.settimeout(None)
        while True:
            try:
                self.sock.recv(4096)
            except OSError:
                return

    @property
    def pid(self):
        return self.process.pid

    def log_tail(self, characters=2000):
        with open(self.log_path, errors="replace") as f:
            return f.read()[-characters:]

    def stop(self):
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.sock.close()
