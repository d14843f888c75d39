"""Paths, loss windows and small helpers the soak's parts share."""
import os
import re
import socket
import threading
import time


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIRESTORE = "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud_firestore_emulator"
PGBIN = "/usr/lib/postgresql/15/bin"
GYRO_SCALE = 16.4  # LSB per °/s at ±2000 °/s (the daemon's default range)
UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")

# Loss windows (seconds around the fault's instant); see docs/soak.md for why each is this wide.
CRASH_BEFORE, CRASH_AFTER = 1.5, 1.0      # documented ≤ 1 s checkpoint interval + scheduling slack
LINK_BEFORE, LINK_AFTER = 1.5, 0.5        # samples held for the time fit when the link goes
STALL_AFTER = 3.0                          # a stall the watchdog turned into a reconnect
KILL_BEFORE = 0.6                          # kill -9 only in the first 60 % (RSS trend afterwards)
SESSION_EDGE = 2.0                         # samples this close to a start/stop may fall either side


def log(message):
    print(f"soak {time.strftime('%H:%M:%S')} {message}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Failure(Exception):
    pass


class LoopbackListener:
    """A TCP listener on 127.0.0.1 that can be closed and opened again on the same port (an
    unplugged receiver, an upstream outage). Subclasses call start_listening() once their own
    state is set, and get accepted(conn) on the accept thread for each client while
    accepting() holds."""

    def start_listening(self, backlog):
        self.port = free_port()
        self.backlog = backlog
        self.listener = None
        self.stopped = False
        self.listen()
        threading.Thread(target=self.accept_loop, daemon=True).start()

    def listen(self):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(self.backlog)
        self.listener = s

    def close_listener(self):
        """Nothing listens until listen() again: connecting clients are refused."""
        if self.listener:
            self.listener.close()
            self.listener = None

    def accepting(self):
        return True

    def accepted(self, conn):
        raise NotImplementedError

    def accept_loop(self):
        while not self.stopped:
            listener = self.listener
            if listener is None or not self.accepting():
                time.sleep(0.1)
                continue
            try:
                listener.settimeout(0.2)
                conn, _ = listener.accept()
            except OSError:
                continue
            self.accepted(conn)
