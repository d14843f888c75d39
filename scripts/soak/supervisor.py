"""mwgated under a supervisor with systemd's Restart=on-failure semantics: a clean exit 0 is
not restarted, any other exit status or a signal is, after RestartSec."""
import os
import signal
import subprocess
import threading
import time
from common import Failure


class Supervisor:
    def __init__(self, binary, config, env, logpath, restart_delay):
        self.binary, self.config, self.env, self.logpath = binary, config, env, logpath
        self.restart_delay = restart_delay
        self.lock = threading.Lock()
        self.proc = None
        self.starts = []     # (wall time, pid)
        self.exits = []      # (wall time, pid, returncode)
        self.ready_at = None
        self.killed = None       # the process kill9() ended, until the loop has reaped it
        self.stopping = False
        self.lines = []          # (wall time, daemon log line)
        self.followed_once = False
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()
        threading.Thread(target=self.follow, daemon=True).start()

    def loop(self):
        while not self.stopping:
            # One log per start (mwgated writes no time stamps on stderr; the start times are in
            # self.starts), so a hung start can be told from a quiet one.
            logpath = f"{self.logpath}.{len(self.starts) + 1}"
            logfile = open(logpath, "ab")
            proc = subprocess.Popen([self.binary, "--config", self.config], env=self.env,
                                    stdout=logfile, stderr=logfile, stdin=subprocess.DEVNULL)
            with self.lock:
                self.proc = proc
                self.ready_at = None
                self.starts.append((time.time(), proc.pid))
            threading.Thread(target=self.watch_ready, args=(proc, logpath), daemon=True).start()
            code = proc.wait()
            logfile.close()
            with self.lock:
                self.exits.append((time.time(), proc.pid, code))
                self.proc = None
            if self.stopping or code == 0:
                return
            # Restart=on-failure, RestartSec=: wait, then start again.
            end = time.monotonic() + self.restart_delay
            while time.monotonic() < end and not self.stopping:
                time.sleep(0.1)

    def follow(self):
        """Every daemon log line with the wall time it appeared (polled every 50 ms)."""
        positions = {}
        while not self.stopping or not self.followed_once:
            for n in range(1, len(self.starts) + 1):
                path = f"{self.logpath}.{n}"
                try:
                    with open(path, "rb") as f:
                        f.seek(positions.get(path, 0))
                        data = f.read()
                except OSError:
                    continue
                cut = data.rfind(b"\n") + 1
                positions[path] = positions.get(path, 0) + cut
                now = time.time()
                for line in data[:cut].decode(errors="replace").splitlines():
                    self.lines.append((now, line))
            self.followed_once = self.stopping
            time.sleep(0.05)

    def streaming_after(self, address, t):
        """When `address` was next reported streaming (handshake complete) after `t`, or None."""
        needle = f"board {address} streaming:"
        for when, line in list(self.lines):
            if when > t and needle in line:
                return when
        return None

    def watch_ready(self, proc, logpath):
        while proc.poll() is None:
            try:
                with open(logpath, "rb") as f:
                    if b"ready in" in f.read():
                        with self.lock:
                            if self.proc is proc:
                                self.ready_at = time.time()
                        return
            except OSError:
                pass
            time.sleep(0.2)

    def ready(self):
        # Not the process kill9() just ended: the loop may not have reaped it yet.
        with self.lock:
            return self.proc is not None and self.proc is not self.killed and self.ready_at is not None

    def pid(self):
        with self.lock:
            return self.proc.pid if self.proc else None

    def kill9(self):
        with self.lock:
            proc = self.proc
            self.killed = proc
        if proc is None:
            return None
        os.kill(proc.pid, signal.SIGKILL)
        return proc.pid

    def stop(self, timeout=20):
        self.stopping = True
        with self.lock:
            proc = self.proc
        if proc:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise Failure(f"mwgated did not stop within {timeout} s of SIGTERM")
        self.thread.join(timeout=5)
