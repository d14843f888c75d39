#!/usr/bin/python3
"""mwgate soak: a whole gateway under injected faults, checked sample by sample.

Starts a private dbus-daemon, mwsim (boards of both chip profiles at 100 Hz), an NMEA replay
served over TCP, a real upstream (Google's Firestore emulator and/or PostgreSQL 15) behind a
fault proxy, and mwgated under a supervisor with systemd's Restart=on-failure semantics. While
sessions are recorded through mwctl, faults chosen by a seeded generator are injected: board
link drops and stalls, a bluetoothd restart, GNSS unplug and return, upstream outage and
dropped responses, kill -9 of mwgated. At the end every gyro sample the simulated boards
handed to mwgated (mwsim's io.mwgate.Simulator1.GetDeliveredRuns) is looked up in the
upstream: lost samples must each be explained by a fault window, duplicates must be 0, the
buffer must pass PRAGMA integrity_check and mwgated's RSS must not grow. Exit status 0 only
when every check passes. See docs/soak.md.

Runs with Debian's python3 (python3-dbus): /usr/bin/python3 scripts/soak/soak.py --help
"""
import argparse
import json
import os
import random
import re
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

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


# ---------------------------------------------------------------------------------------------
# NMEA replay over TCP, with unplug (listener closed, clients cut) and return.

class NMEAServer:
    def __init__(self, path):
        with open(path, "rb") as f:
            lines = [l.rstrip(b"\r\n") + b"\r\n" for l in f if l.startswith(b"$")]
        # Cycles by the UTC time of RMC/GGA: one cycle per second of replay.
        self.cycles, current, key = [], [], None
        for line in lines:
            fields = line.split(b",")
            if fields[0][3:6] in (b"RMC", b"GGA") and len(fields) > 1:
                if key is not None and fields[1] != key and current:
                    self.cycles.append(current)
                    current = []
                key = fields[1]
            current.append(line)
        if current:
            self.cycles.append(current)
        if not self.cycles:
            raise Failure(f"no NMEA sentences in {path}")
        self.port = free_port()
        self.lock = threading.Lock()
        self.clients = []
        self.listener = None
        self.stopped = False
        self.plugged = True
        self.listen()
        threading.Thread(target=self.accept_loop, daemon=True).start()
        threading.Thread(target=self.feed_loop, daemon=True).start()

    def listen(self):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(4)
        self.listener = s

    def accept_loop(self):
        while not self.stopped:
            listener = self.listener
            if listener is None or not self.plugged:
                time.sleep(0.1)
                continue
            try:
                listener.settimeout(0.2)
                conn, _ = listener.accept()
            except OSError:
                continue
            with self.lock:
                if self.plugged:
                    self.clients.append(conn)
                else:
                    conn.close()

    @staticmethod
    def shifted(line, seconds):
        """The sentence with its UTC time (and RMC's date) moved forward, checksum redone, so
        a capture replayed in a loop keeps GNSS time going forward."""
        if seconds == 0:
            return line
        body = line.strip()[1:].split(b"*")[0]
        fields = body.split(b",")
        kind = fields[0][2:5]
        position = {b"RMC": 1, b"GGA": 1, b"GNS": 1, b"GST": 1, b"ZDA": 1, b"GLL": 5}.get(kind)
        if position is None or len(fields) <= position or len(fields[position]) < 6:
            return line
        try:
            text = fields[position].decode()
            of_day = int(text[0:2]) * 3600 + int(text[2:4]) * 60 + float(text[4:])
        except ValueError:
            return line
        total = of_day + seconds
        days, of_day = divmod(total, 86400)
        h, rest = divmod(of_day, 3600)
        m, sec = divmod(rest, 60)
        decimals = len(text.split(".")[1]) if "." in text else 0
        width = 3 + decimals if decimals else 2
        fields[position] = f"{int(h):02d}{int(m):02d}{sec:0{width}.{decimals}f}".encode()
        if days and kind == b"RMC" and len(fields) > 9 and len(fields[9]) == 6:
            import datetime
            try:
                d = datetime.date(2000 + int(fields[9][4:6]), int(fields[9][2:4]), int(fields[9][0:2]))
                d += datetime.timedelta(days=int(days))
                fields[9] = d.strftime("%d%m%y").encode()
            except ValueError:
                pass
        body = b",".join(fields)
        checksum = 0
        for byte in body:
            checksum ^= byte
        return b"$" + body + b"*%02X\r\n" % checksum

    def feed_loop(self):
        i = 0
        while not self.stopped:
            cycle = self.cycles[i % len(self.cycles)]
            shift = (i // len(self.cycles)) * len(self.cycles)
            i += 1
            payload = b"".join(self.shifted(line, shift) for line in cycle)
            with self.lock:
                for c in list(self.clients):
                    try:
                        c.sendall(payload)
                    except OSError:
                        self.clients.remove(c)
                        c.close()
            time.sleep(1.0)

    def unplug(self):
        with self.lock:
            self.plugged = False
            for c in self.clients:
                c.close()
            self.clients = []
            if self.listener:
                self.listener.close()
                self.listener = None

    def replug(self):
        with self.lock:
            if self.plugged:
                return
            self.listen()
            self.plugged = True

    def stop(self):
        self.stopped = True
        self.unplug()


# ---------------------------------------------------------------------------------------------
# A TCP proxy in front of the upstream: pass, refuse (outage: nothing listens) or drop the
# response to the next request(s) after the upstream got them (unknown outcome for the client).

class FaultProxy:
    def __init__(self, upstream_port, trigger):
        self.upstream_port = upstream_port
        self.trigger = trigger  # bytes in a client message whose response may be dropped
        self.port = free_port()
        self.lock = threading.Lock()
        self.listener = None
        self.pairs = []
        self.drops_pending = 0
        self.drops_done = 0
        self.stopped = False
        self.listen()
        threading.Thread(target=self.accept_loop, daemon=True).start()

    def listen(self):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(16)
        self.listener = s

    def accept_loop(self):
        while not self.stopped:
            listener = self.listener
            if listener is None:
                time.sleep(0.1)
                continue
            try:
                listener.settimeout(0.2)
                client, _ = listener.accept()
            except OSError:
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            except OSError:
                client.close()
                continue
            pair = (client, server)
            with self.lock:
                self.pairs.append(pair)
            threading.Thread(target=self.pump, args=(pair,), daemon=True).start()

    def pump(self, pair):
        client, server = pair
        armed_at = None  # a triggering request went through while a drop was pending
        try:
            while not self.stopped:
                readable, _, _ = select.select([client, server], [], [], 0.2)
                if armed_at is not None and time.monotonic() - armed_at > 0.5:
                    break  # the upstream had time to commit; the client never hears back
                for s in readable:
                    data = s.recv(65536)
                    if not data:
                        raise OSError("closed")
                    if s is client:
                        server.sendall(data)
                        if armed_at is None and self.trigger in data:
                            with self.lock:
                                if self.drops_pending > 0:
                                    self.drops_pending -= 1
                                    self.drops_done += 1
                                    armed_at = time.monotonic()
                    elif armed_at is None:
                        client.sendall(data)
        except OSError:
            pass
        finally:
            for s in pair:
                try:
                    s.close()
                except OSError:
                    pass
            with self.lock:
                if pair in self.pairs:
                    self.pairs.remove(pair)

    def outage(self):
        with self.lock:
            if self.listener:
                self.listener.close()
                self.listener = None
            for pair in self.pairs:
                for s in pair:
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

    def restore(self):
        with self.lock:
            if self.listener is None:
                self.listen()

    def drop_responses(self, count):
        with self.lock:
            self.drops_pending += count

    def stop(self):
        self.stopped = True
        self.outage()


# ---------------------------------------------------------------------------------------------
# Upstreams.

class Firestore:
    kind = "firestore"
    trigger = b":commit"

    def __init__(self, work):
        self.port = free_port()
        self.project = "demo-mwgate-soak"
        self.proc = subprocess.Popen([FIRESTORE, "start", "--host=127.0.0.1", f"--port={self.port}",
                                      f"--project_id={self.project}"],
                                     stdout=open(f"{work}/firestore.log", "wb"), stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=2)
                return
            except Exception:
                time.sleep(0.5)
        self.stop()
        raise Failure("the Firestore emulator did not answer within 120 s")

    def sink_config(self, proxy_port):
        return f'[sink]\ntype = "firestore"\nmax_requests_per_second = 20\n\n[sink.firestore]\n' \
               f'project_id = "{self.project}"\nemulator_host = "127.0.0.1:{proxy_port}"\n'

    def documents(self):
        base = f"http://127.0.0.1:{self.port}/v1/projects/{self.project}/databases/(default)/documents/realtime_data"
        docs, token = [], None
        while True:
            url = base + "?pageSize=100" + (f"&pageToken={token}" if token else "")
            req = urllib.request.Request(url, headers={"Authorization": "Bearer owner"})
            body = json.load(urllib.request.urlopen(req, timeout=120))
            for d in body.get("documents", []):
                f = plain({"mapValue": {"fields": d.get("fields", {})}})
                docs.append({"name": d["name"].rsplit("/", 1)[-1], "session": f["session_id"], "board": f["board"],
                             "seq": f["seq"], "data": f["data"]})
            token = body.get("nextPageToken")
            if not token:
                return docs

    def stop(self):
        # The whole process group: the launcher script may exit before its java child does.
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            for _ in range(100):
                os.killpg(self.proc.pid, 0)
                time.sleep(0.1)
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def plain(value):
    """Firestore's typed JSON to plain Python values."""
    if "mapValue" in value:
        return {k: plain(v) for k, v in value["mapValue"].get("fields", {}).items()}
    if "arrayValue" in value:
        return [plain(v) for v in value["arrayValue"].get("values", [])]
    if "integerValue" in value:
        return int(value["integerValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "stringValue" in value:
        return value["stringValue"]
    if "booleanValue" in value:
        return value["booleanValue"]
    if "nullValue" in value:
        return None
    if "timestampValue" in value:
        return value["timestampValue"]
    return value


class Postgres:
    kind = "postgres"
    trigger = b"COMMIT"

    def __init__(self, work):
        self.dir = f"{work}/pg"
        os.makedirs(self.dir)
        self.as_user = []
        if os.getuid() == 0:
            os.chown(self.dir, 65534, 65534)
            os.chmod(self.dir, 0o700)
            self.as_user = ["/usr/sbin/runuser", "-u", "nobody", "--"]
        self.port = free_port()
        r = subprocess.run(self.as_user + [f"{PGBIN}/initdb", "-D", f"{self.dir}/data", "-A", "trust", "-U", "postgres",
                                           "--no-sync", "-E", "UTF8"], capture_output=True, text=True)
        if r.returncode != 0:
            raise Failure(f"initdb failed: {r.stdout}{r.stderr}")
        self.proc = subprocess.Popen(self.as_user + [f"{PGBIN}/postgres", "-D", f"{self.dir}/data", "-c",
                                                     "listen_addresses=127.0.0.1", "-p", str(self.port), "-k", self.dir,
                                                     "-c", "fsync=off"],
                                     stdout=open(f"{work}/postgres.log", "wb"), stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if subprocess.run([f"{PGBIN}/pg_isready", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres"],
                              capture_output=True).returncode == 0:
                return
            time.sleep(0.3)
        raise Failure("PostgreSQL did not start within 60 s")

    def sink_config(self, proxy_port):
        return f'[sink]\ntype = "postgres"\nmax_requests_per_second = 20\n\n[sink.postgres]\n' \
               f'host = "127.0.0.1"\nport = {proxy_port}\nuser = "postgres"\ndatabase = "postgres"\nsslmode = "disable"\n'

    def psql(self, sql):
        r = subprocess.run([f"{PGBIN}/psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", "postgres",
                            "-At", "-v", "ON_ERROR_STOP=1", "-c", sql], capture_output=True, text=True)
        if r.returncode != 0:
            raise Failure(f"psql failed: {r.stderr}")
        return r.stdout

    def documents(self):
        out = self.psql("SELECT json_build_object('name', name, 'session', session_id, 'board', board, 'seq', seq, "
                        "'data', data) FROM realtime_data")
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def stop(self):
        # Signal the postmaster itself: runuser does not pass signals on.
        try:
            with open(f"{self.dir}/data/postmaster.pid") as f:
                pid = int(f.readline())
            os.kill(pid, signal.SIGINT)
            for _ in range(200):
                os.kill(pid, 0)
                time.sleep(0.1)
            os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass
        try:
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()


# ---------------------------------------------------------------------------------------------
# mwgated under a supervisor: Restart=on-failure semantics (a clean exit 0 is not restarted,
# any other exit status or a signal is, after RestartSec).

class Supervisor:
    def __init__(self, binary, config, env, logpath, restart_delay):
        self.binary, self.config, self.env, self.logpath = binary, config, env, logpath
        self.restart_delay = restart_delay
        self.lock = threading.Lock()
        self.proc = None
        self.starts = []     # (wall time, pid)
        self.exits = []      # (wall time, pid, returncode)
        self.ready_at = None
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
            offset = 0
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
        with self.lock:
            return self.proc is not None and self.ready_at is not None

    def pid(self):
        with self.lock:
            return self.proc.pid if self.proc else None

    def kill9(self):
        with self.lock:
            proc = self.proc
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


# ---------------------------------------------------------------------------------------------

def simulator_signal(sensor, seed, index):
    """mwsim's deterministic sample (MetaWearBoardModel.SimulatedBoard.signal)."""
    m = 0xFFFFFFFF
    salt = 0x9E3779B9 if sensor == "gyro" else 0x85EBCA6B
    h = ((index & m) * 0x27D4EB2F & m) ^ (seed * 0x165667B1 & m) ^ salt
    h ^= h >> 15
    h = h * 0x2C1B3C6D & m
    h ^= h >> 12
    h = h * 0x297A2D39 & m
    h ^= h >> 15

    def s16(v):
        v &= 0xFFFF
        return v - 0x10000 if v >= 0x8000 else v
    return s16(index), s16(h), s16(h >> 16)


class Soak:
    def __init__(self, args, sink_kind, seconds, seed, out_prefix):
        self.args, self.sink_kind, self.seconds, self.seed = args, sink_kind, seconds, seed
        self.out_prefix = out_prefix
        self.rng = random.Random(seed)
        self.work = tempfile.mkdtemp(prefix=f"mwgate-soak-{sink_kind}-")
        os.chmod(self.work, 0o755)  # PostgreSQL runs as nobody when we are root
        self.bin = args.bin
        self.processes = []
        self.faults = []          # dicts: kind, at (wall), board, seconds, ...
        self.sessions = []        # dicts: id, start (wall, after start returned), end, ended_by
        self.rss = []             # (wall, pid, kB)
        self.notes = []
        self.failures = []

    # --- infrastructure -----------------------------------------------------------------------
    def start_bus(self):
        conf = f"{self.work}/bus.conf"
        with open(conf, "w") as f:
            f.write(f"""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:path={self.work}/bus</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*"/><allow receive_sender="*"/><allow own="*"/><allow user="*"/></policy>
</busconfig>""")
        r, w = os.pipe()
        p = subprocess.Popen(["dbus-daemon", f"--config-file={conf}", "--nofork", "--nopidfile", f"--print-address={w}"],
                             pass_fds=(w,), stderr=open(f"{self.work}/bus.log", "wb"))
        os.close(w)
        self.processes.append(p)
        self.bus_address = os.read(r, 4096).decode().strip().splitlines()[0]
        os.close(r)
        import dbus
        self.dbus = dbus
        self.conn = dbus.bus.BusConnection(self.bus_address)

    def simulator(self):
        obj = self.conn.get_object("io.mwgate.Simulator", "/io/mwgate/Simulator1")
        return self.dbus.Interface(obj, "io.mwgate.Simulator1")

    def start_mwsim(self):
        p = subprocess.Popen([f"{self.bin}/mwsim", "--bus", self.bus_address, "--boards", str(self.args.boards),
                              "--model", "mixed", "--quiet", "--seed", str(self.seed)],
                             stdout=subprocess.DEVNULL, stderr=open(f"{self.work}/mwsim.log", "wb"))
        self.processes.append(p)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                self.boards = [(int(i), str(path), str(addr), str(profile)) for i, path, addr, profile in
                               self.simulator().ListBoards()]
                return
            except Exception:
                time.sleep(0.2)
        raise Failure("mwsim did not take io.mwgate.Simulator within 30 s")

    def mwctl(self, *argv, timeout=20):
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus_address)
        try:
            r = subprocess.run([f"{self.bin}/mwctl", *argv], env=env, capture_output=True, text=True, timeout=timeout)
            return r.returncode, r.stdout + r.stderr
        except subprocess.TimeoutExpired:
            return -1, f"mwctl {' '.join(argv)}: no answer within {timeout} s"

    def status(self):
        code, out = self.mwctl("status", "--json", timeout=10)
        if code != 0:
            return None
        try:
            return json.loads(out)
        except ValueError:
            return None

    # --- the run --------------------------------------------------------------------------------
    def run(self):
        log(f"{self.sink_kind}: seed {self.seed}, {self.seconds:.0f} s, {self.args.boards} boards at 100 Hz, work {self.work}")
        self.start_bus()
        self.start_mwsim()
        self.gnss = NMEAServer(self.args.nmea)
        self.upstream = Firestore(self.work) if self.sink_kind == "firestore" else Postgres(self.work)
        self.proxy = FaultProxy(self.upstream.port, self.upstream.trigger)
        for d in ("state", "run", "etc", "credentials"):
            os.makedirs(f"{self.work}/{d}")
        with open(f"{self.work}/credentials/postgres-password", "w") as f:
            f.write("unused-trust-auth\n")
        config = f"{self.work}/etc/mwgated.toml"
        with open(config, "w") as f:
            f.write(f'[boards]\ngyro_rate = 100\n\n[gnss]\nsource = "tcp://127.0.0.1:{self.gnss.port}"\n\n'
                    f'[session]\nmode = "manual"\nbutton_toggles = false\n\n' + self.upstream.sink_config(self.proxy.port))
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus_address, STATE_DIRECTORY=f"{self.work}/state",
                   RUNTIME_DIRECTORY=f"{self.work}/run", CONFIGURATION_DIRECTORY=f"{self.work}/etc",
                   CREDENTIALS_DIRECTORY=f"{self.work}/credentials")
        env.pop("NOTIFY_SOCKET", None)
        env.pop("MWGATE_JOURNAL_SOCKET", None)
        self.supervisor = Supervisor(f"{self.bin}/mwgated", config, env, f"{self.work}/mwgated.log",
                                     self.args.restart_delay)
        self.wait_streaming(90)
        self.started = time.time()
        self.plan = self.make_plan()
        log("fault plan: " + "; ".join(f"{f['kind']}@{f['offset']:.1f}s" + (f",board={f['board']}" if 'board' in f else "")
                                      + (f",for={f['seconds']:.1f}s" if 'seconds' in f else "") for f in self.plan))
        self.loop()
        self.finish()

    def wait_streaming(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.status() if self.supervisor.ready() else None
            if s and sum(1 for b in s.get("boards", []) if b.get("streaming")) >= self.args.boards:
                return True
            time.sleep(0.5)
        raise Failure(f"not all {self.args.boards} boards streaming within {timeout} s (see {self.work}/mwgated.log)")

    def make_plan(self):
        """The faults of the whole run, from the seed alone (replayable)."""
        kinds = [("link-drop", 5), ("stall", 4), ("restart-bluetoothd", 1), ("gnss-unplug", 2),
                 ("upstream-outage", 2), ("drop-responses", 3), ("kill-9", 2)]
        weights = [w for _, w in kinds]
        plan, t = [], 8.0
        quiet_tail = max(10.0, self.seconds * 0.1)
        while True:
            t += self.rng.expovariate(1 / self.args.fault_interval)
            if t > self.seconds - quiet_tail:
                break
            kind = self.rng.choices([k for k, _ in kinds], weights)[0]
            if kind == "kill-9" and t > self.seconds * KILL_BEFORE:
                kind = "link-drop"  # the last daemon lives long enough for an RSS trend
            step = {"kind": kind, "offset": round(t, 2)}
            if kind in ("link-drop", "stall"):
                step["board"] = self.rng.randrange(self.args.boards)
            if kind == "stall":
                step["seconds"] = round(self.rng.uniform(0.5, 4.0), 2)
            if kind == "gnss-unplug":
                step["seconds"] = round(self.rng.uniform(3, 15), 2)
            if kind == "upstream-outage":
                step["seconds"] = round(self.rng.uniform(5, 25), 2)
            if kind == "drop-responses":
                step["count"] = self.rng.randint(1, 3)
            plan.append(step)
        # Every kind at least once in a run long enough for it.
        present = {s["kind"] for s in plan}
        for i, (kind, _) in enumerate(kinds):
            if kind not in present and self.seconds >= 40:
                offset = round(8 + (self.seconds - quiet_tail - 8) * (i + 0.5) / len(kinds), 2)
                if kind == "kill-9":
                    offset = round(min(offset, self.seconds * KILL_BEFORE), 2)
                step = {"kind": kind, "offset": offset}
                if kind in ("link-drop", "stall"):
                    step["board"] = i % self.args.boards
                if kind == "stall":
                    step["seconds"] = 2.0
                if kind == "gnss-unplug":
                    step["seconds"] = 8.0
                if kind == "upstream-outage":
                    step["seconds"] = 10.0
                if kind == "drop-responses":
                    step["count"] = 2
                plan.append(step)
        plan.sort(key=lambda s: s["offset"])
        # Session lengths, also from the seed.
        self.session_lengths = [self.rng.uniform(15, 45) for _ in range(1000)]
        return plan

    def loop(self):
        pending = list(self.plan)
        timers = []          # (wall time, action)
        session = None
        next_rss = 0
        stop_at = self.started + self.seconds
        while time.time() < stop_at:
            now = time.time()
            while pending and self.started + pending[0]["offset"] <= now:
                step = pending.pop(0)
                timers += self.inject(step, session)
                if step["kind"] == "kill-9" and session is not None:
                    session["end"] = step["at"]
                    session["ended_by"] = "kill-9"
                    self.sessions.append(session)
                    session = None
            for t in [t for t in timers if t[0] <= now]:
                timers.remove(t)
                t[1]()
            if now >= next_rss:
                next_rss = now + self.args.rss_interval
                pid = self.supervisor.pid()
                if pid:
                    try:
                        with open(f"/proc/{pid}/status") as f:
                            kb = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
                        self.rss.append((now, pid, kb))
                    except (OSError, AttributeError):
                        pass
            if session is None:
                if self.supervisor.ready() and stop_at - now > 8:
                    session = self.start_session()
            elif now >= session["planned_end"]:
                self.stop_session(session, "stop")
                self.sessions.append(session)
                session = None
            time.sleep(0.1)
        if session is not None:
            self.stop_session(session, "stop")
            self.sessions.append(session)
        for _, action in timers:
            action()

    def start_session(self):
        code, out = self.mwctl("session", "start")
        if code != 0:
            self.notes.append(f"{time.strftime('%H:%M:%S')} session start failed ({code}): {out.strip()}")
            time.sleep(1)
            return None
        m = UUID.search(out)
        length = self.session_lengths[len(self.sessions) % len(self.session_lengths)]
        return {"id": m.group(0).upper() if m else None, "start": time.time(), "planned_end": time.time() + length}

    def stop_session(self, session, how):
        session["stop_called"] = time.time()
        code, out = self.mwctl("session", "stop")
        session["end"] = session["stop_called"]
        session["ended_by"] = how if code == 0 else f"stop failed ({code}): {out.strip()[:200]}"
        if code == 0:
            # What the daemon counted per board (gyro samples received, and in the session)
            # right after the stop: with mwsim's delivered runs this tells a sample that never
            # reached the recording pipeline from one it received and did not record.
            number = len(self.sessions) + 1

            def snapshot(suffix):
                status = self.status()
                if status is not None:
                    with open(f"{self.work}/status-after-stop-{number}{suffix}.json", "w") as f:
                        json.dump({"stop_called": session["stop_called"] - self.started,
                                   "taken": time.time() - self.started, "status": status}, f, indent=1)
            snapshot("")
            # Again a little later: samples still on their way when the stop came show up
            # in the received counts then.
            threading.Timer(3.0, snapshot, args=("-later",)).start()
            self.mwctl("survey", "submit", "--hazard", "pothole=2")

    def inject(self, step, session):
        """Applies one fault now; returns the timers that end it."""
        step["at"] = time.time()
        self.faults.append(step)
        kind = step["kind"]
        sim = self.simulator()
        log(f"fault {kind}" + (f" board {step['board']}" if "board" in step else "")
            + (f" for {step['seconds']} s" if "seconds" in step else "") + (f" x{step['count']}" if "count" in step else ""))
        try:
            if kind == "link-drop":
                sim.DropLink(self.dbus.UInt32(step["board"]))
            elif kind == "stall":
                sim.Stall(self.dbus.UInt32(step["board"]), self.dbus.Double(step["seconds"]))
            elif kind == "restart-bluetoothd":
                sim.RestartBluetoothd()
            elif kind == "gnss-unplug":
                self.gnss.unplug()
                return [(time.time() + step["seconds"], self.gnss.replug)]
            elif kind == "upstream-outage":
                self.proxy.outage()
                return [(time.time() + step["seconds"], self.proxy.restore)]
            elif kind == "drop-responses":
                self.proxy.drop_responses(step["count"])
            elif kind == "kill-9":
                step["pid"] = self.supervisor.kill9()
        except Exception as error:  # a fault that could not be applied is reported, not fatal
            step["error"] = str(error)
            self.notes.append(f"fault {kind} not applied: {error}")
        return []

    # --- the end: drain, collect, compare -----------------------------------------------------
    def finish(self):
        self.gnss.replug()
        self.proxy.restore()
        self.proxy.drops_pending = 0
        log("run over: waiting for the backlog to drain")
        deadline = time.time() + self.args.drain_timeout
        drained = False
        while time.time() < deadline:
            s = self.status() if self.supervisor.ready() else None
            if s and s.get("backlog") is not None:
                b = s["backlog"]
                if b["documents"] == 0 and b["inFlight"] == 0 and s["session"]["state"] == "idle" \
                        and not s["session"].get("awaitingSurvey"):
                    drained = True
                    break
                if s["session"].get("awaitingSurvey"):
                    self.mwctl("survey", "submit", "--hazard", "kerb=1")
                if b["dead"]:
                    self.failures.append(f"{b['dead']} dead document(s) in the outbox")
                    break
            time.sleep(1)
        if not drained:
            self.failures.append(f"the upload backlog did not drain within {self.args.drain_timeout} s")
        sim = self.simulator()
        self.delivered = {}
        self.link_stats = {}
        for index, _, address, profile in self.boards:
            runs = sim.GetDeliveredRuns(self.dbus.UInt32(index), "gyro")
            self.delivered[address] = [(int(a), int(b), int(c) / 1e6, int(d) / 1e6) for a, b, c, d in runs]
            with open(f"{self.work}/delivered-{index}.txt", "w") as f:
                # mwsim's delivered runs of this board (first..last index, seconds since the start).
                for a, b, c, d in self.delivered[address]:
                    f.write(f"{a}..{b} {c - self.started:+.3f}..{d - self.started:+.3f}\n")
            stats = sim.GetStats(self.dbus.UInt32(index))
            self.link_stats[address] = {k: int(stats.get(k, 0)) for k in
                                        ("DroppedByRateCap", "UndeliveredNoSubscriber", "Connections", "Disconnections")}
        self.samples_received = {}
        s = self.status()
        if s:
            for b in s["boards"]:
                self.samples_received[b["address"]] = b["gyroSamplesReceived"]
        log("stopping mwgated (SIGTERM)")
        try:
            self.supervisor.stop()
        except Failure as error:
            self.failures.append(str(error))
        self.exits = list(self.supervisor.exits)
        if not self.exits or self.exits[-1][2] != 0:
            self.failures.append(f"mwgated did not exit 0 at SIGTERM (last exit: {self.exits[-1][2] if self.exits else 'none'})")
        db = f"{self.work}/state/buffer.sqlite"
        try:
            c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            self.integrity = [r[0] for r in c.execute("PRAGMA integrity_check")]
            c.close()
        except sqlite3.Error as error:
            self.integrity = [f"cannot open: {error}"]
        if self.integrity != ["ok"]:
            self.failures.append(f"PRAGMA integrity_check: {'; '.join(self.integrity[:5])}")
        self.documents = self.upstream.documents()
        self.compare()

    def compare(self):
        by_board = {}
        for d in self.documents:
            by_board.setdefault(d["board"], []).append(d)
        self.per_board = {}
        self.loss_runs = []
        for index, _, address, profile in self.boards:
            runs = self.delivered.get(address, [])
            seed = index + 1

            def delivery_time(i, runs=runs):
                for a, b, ta, tb in runs:
                    if a <= i <= b:
                        return ta if b == a else ta + (tb - ta) * (i - a) / (b - a)
                return None

            # Upstream points: per session, in seq order, 16-bit index unwrapped from an anchor.
            docs = sorted(by_board.get(address, []), key=lambda d: (d["session"], d["seq"]))
            sessions = {}
            for d in docs:
                sessions.setdefault(d["session"], []).append(d)
            counts = {}
            mismatches = 0
            unanchored = 0
            session_start = {s["id"]: s["start"] for s in self.sessions if s.get("id")}
            for sid, sdocs in sessions.items():
                points = [p for d in sdocs for p in d["data"]]
                if not points:
                    continue
                lows = []
                for p in points:
                    g = p["gyroscope"]
                    raw = [round(g[k] * GYRO_SCALE) for k in ("x", "y", "z")]
                    lows.append((raw[0] & 0xFFFF, raw))
                anchor_time = session_start.get(sid)
                first_low = lows[0][0]
                candidates = [i for a, b, _, _ in runs for i in
                              range(a + ((first_low - a) & 0xFFFF), b + 1, 0x10000)]
                if anchor_time is not None and candidates:
                    full = min(candidates, key=lambda i: abs(delivery_time(i) - anchor_time))
                elif candidates:
                    full = candidates[0]
                    unanchored += 1
                else:
                    full = first_low
                    unanchored += 1
                previous = None
                for low, raw in lows:
                    if previous is not None:
                        delta = (low - previous) & 0xFFFF
                        full = previous_full + (delta if delta < 0x8000 else delta - 0x10000)
                    previous, previous_full = low, full
                    counts[full] = counts.get(full, 0) + 1
                    x, y, z = simulator_signal("gyro", seed, full)
                    if (raw[0], raw[1], raw[2]) != (x, y, z):
                        mismatches += 1
            delivered = {i for a, b, _, _ in runs for i in range(a, b + 1)}
            duplicates = sum(c - 1 for c in counts.values() if c > 1)
            phantom = sum(1 for i in counts if i not in delivered)
            # Required: delivered while a session recorded (away from its edges).
            windows = []
            for s in self.sessions:
                if s.get("start") is None or s.get("end") is None:
                    continue
                end_edge = 0.0 if s.get("ended_by") == "kill-9" else SESSION_EDGE
                windows.append((s["start"] + SESSION_EDGE, s["end"] - end_edge))
            causes = {}
            edge = 0
            loss_runs = []
            for a, b, ta, tb in runs:
                for i in range(a, b + 1):
                    if i in counts:
                        continue
                    t = ta if b == a else ta + (tb - ta) * (i - a) / (b - a)
                    if not any(w0 <= t <= w1 for w0, w1 in windows):
                        if any(s["start"] - SESSION_EDGE <= t <= s["end"] + SESSION_EDGE for s in self.sessions if s.get("end")):
                            edge += 1
                        continue
                    cause = self.explain(index, address, t)
                    causes[cause] = causes.get(cause, 0) + 1
                    # Losses as runs of consecutive indices with one cause, for the report.
                    if loss_runs and loss_runs[-1][1] == i - 1 and loss_runs[-1][4] == cause:
                        loss_runs[-1][1], loss_runs[-1][3] = i, t
                    else:
                        loss_runs.append([i, i, t, t, cause])
            required = sum(1 for a, b, ta, tb in runs for i in range(a, b + 1)
                           if any(w0 <= (ta if b == a else ta + (tb - ta) * (i - a) / (b - a)) <= w1 for w0, w1 in windows))
            for a, b, ta, tb, cause in loss_runs:
                self.loss_runs.append((index, a, b, ta - self.started, tb - self.started, cause))
            self.per_board[address] = {
                "index": index, "profile": profile, "emitted": len(delivered), "runs": len(runs),
                "upstream_points": sum(counts.values()), "delivered_unique": len(counts), "duplicates": duplicates,
                "phantom": phantom, "mismatches": mismatches, "unanchored": unanchored, "required": required,
                "lost": causes, "edge_not_required": edge, "documents": len(docs),
                "received_by_daemon": self.samples_received.get(address),
            }
            if duplicates:
                self.failures.append(f"board {index}: {duplicates} duplicated sample(s)")
            if phantom:
                self.failures.append(f"board {index}: {phantom} upstream sample(s) the board never delivered")
            if mismatches:
                self.failures.append(f"board {index}: {mismatches} sample value(s) differ from what the board sent")
            if causes.get("unexplained"):
                self.failures.append(f"board {index}: {causes['unexplained']} sample(s) lost with no fault to explain them")
        names = [d["name"] for d in self.documents]
        if len(names) != len(set(names)):
            self.failures.append("a document name appears twice upstream")
        self.check_rss()

    def explain(self, board, address, t):
        """The fault whose window holds a sample delivered at `t` and never upstream, or
        "unexplained". A link fault's window runs from just before it until the daemon's
        handshake with the board is complete again (samples a board streams from before the
        reconnect, while the handshake runs, are not for anyone: Boards' BoardSession.receive)."""
        handshake_end = lambda at: (self.supervisor.streaming_after(address, at) or at) + 0.3
        for f in self.faults:
            at, kind = f["at"], f["kind"]
            if kind == "kill-9":
                if at - CRASH_BEFORE <= t <= at + CRASH_AFTER:
                    return "kill-9 crash window"
                if at < t <= handshake_end(at + self.args.restart_delay):
                    return "kill-9 restart handshake"
            if kind == "link-drop" and f.get("board") == board and at - LINK_BEFORE <= t <= max(at + LINK_AFTER, handshake_end(at)):
                return "link-drop gap"
            if kind == "restart-bluetoothd" and at - LINK_BEFORE <= t <= max(at + LINK_AFTER, handshake_end(at)):
                return "bluetoothd restart gap"
            if kind == "stall" and f.get("board") == board and at - LINK_BEFORE <= t <= max(at + f["seconds"] + STALL_AFTER, handshake_end(at)):
                return "stall reconnect gap"
        return "unexplained"

    def check_rss(self):
        """Growth: within each mwgated process that lived long enough, after a warm-up."""
        self.rss_verdicts = []
        by_pid = {}
        for t, pid, kb in self.rss:
            by_pid.setdefault(pid, []).append((t, kb))
        for pid, series in by_pid.items():
            start = series[0][0]
            steady = [(t, kb) for t, kb in series if t - start >= self.args.rss_warmup]
            if len(steady) < 8 or steady[-1][0] - steady[0][0] < 60:
                continue
            n = len(steady)
            mt = sum(t for t, _ in steady) / n
            mk = sum(kb for _, kb in steady) / n
            slope = sum((t - mt) * (kb - mk) for t, kb in steady) / max(1e-9, sum((t - mt) ** 2 for t, _ in steady))
            quarter = max(2, n // 4)
            first = sorted(kb for _, kb in steady[:quarter])[quarter // 2]
            last = sorted(kb for _, kb in steady[-quarter:])[quarter // 2]
            growth_per_hour = slope * 3600 / 1024
            clear = growth_per_hour > 20 and last > first * 1.10
            self.rss_verdicts.append((pid, steady[0][1], steady[-1][1], max(kb for _, kb in steady),
                                      growth_per_hour, steady[-1][0] - steady[0][0], clear))
            if clear:
                self.failures.append(f"mwgated pid {pid}: RSS grows {growth_per_hour:.1f} MB/h "
                                     f"({first} kB -> {last} kB median of first/last quarter)")

    # --- report -------------------------------------------------------------------------------
    def report(self):
        lines = []
        w = lines.append
        w(f"## Soak against {self.sink_kind} (seed {self.seed})\n")
        w(f"- replay: `make soak SOAK_SECONDS={self.seconds:.0f} SOAK_SEED={self.seed} SOAK_SINK={self.sink_kind}`")
        w(f"- duration {self.seconds:.0f} s of faults and sessions, {self.args.boards} boards "
          f"({', '.join(sorted({b[3] for b in self.boards}))}) at 100 Hz, NMEA replay of `{os.path.basename(self.args.nmea)}` over TCP")
        w(f"- mwgated starts: {len(self.supervisor.starts)} (restart delay {self.args.restart_delay} s) at "
          + ", ".join(f"{t - self.started:+.1f} s (pid {pid})" for t, pid in self.supervisor.starts) + "; exits: "
          + ", ".join(f"{t - self.started:+.1f} s pid {pid} {'SIGKILL' if c == -9 else ('exit ' + str(c) if c >= 0 else 'signal ' + str(-c))}"
                      for t, pid, c in self.exits))
        w("- faults at: " + ", ".join(f"{f['kind']} {f['at'] - self.started:+.1f} s" for f in self.faults))
        w("- sessions: " + ", ".join(f"{s['start'] - self.started:+.1f}..{s['end'] - self.started:+.1f} s ({s.get('ended_by')})"
                                     for s in self.sessions if s.get("end")))
        w(f"- sessions: {len(self.sessions)} ({sum(1 for s in self.sessions if s.get('ended_by') == 'kill-9')} ended by kill -9); "
          f"documents upstream: {len(self.documents)}")
        w(f"- result: **{'PASS' if not self.failures else 'FAIL'}**\n")
        kinds = {}
        for f in self.faults:
            kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
        w("| fault | injected |\n|---|---:|")
        for k, n in sorted(kinds.items()):
            w(f"| {k} | {n} |")
        w(f"| (responses dropped by the proxy) | {self.proxy.drops_done} |\n")
        w("| board | profile | emitted (delivered to mwgated) | required (in a session) | upstream | duplicated | lost | lost by cause | at session edges (not required) |")
        w("|---|---|---:|---:|---:|---:|---:|---|---:|")
        tot = {"emitted": 0, "required": 0, "up": 0, "dup": 0, "lost": 0}
        for address, r in sorted(self.per_board.items(), key=lambda kv: kv[1]["index"]):
            lost = sum(r["lost"].values())
            w(f"| {r['index']} {address} | {r['profile']} | {r['emitted']} | {r['required']} | {r['upstream_points']} | "
              f"{r['duplicates']} | {lost} | {', '.join(f'{k}: {v}' for k, v in sorted(r['lost'].items())) or '-'} | "
              f"{r['edge_not_required']} |")
            tot["emitted"] += r["emitted"]
            tot["required"] += r["required"]
            tot["up"] += r["upstream_points"]
            tot["dup"] += r["duplicates"]
            tot["lost"] += lost
        w(f"| **all** | | **{tot['emitted']}** | **{tot['required']}** | **{tot['up']}** | **{tot['dup']}** | **{tot['lost']}** | | |\n")
        w("mwsim's link counters (not counted as emitted: these never reached mwgated): "
          + "; ".join(f"board {r['index']}: {self.link_stats.get(a, {}).get('Connections', 0)} connections, "
                      f"{self.link_stats.get(a, {}).get('DroppedByRateCap', 0)} notifications dropped by a full notify socket, "
                      f"{self.link_stats.get(a, {}).get('UndeliveredNoSubscriber', 0)} with no subscriber"
                      for a, r in sorted(self.per_board.items(), key=lambda kv: kv[1]["index"])) + "\n")
        mism = sum(r["mismatches"] for r in self.per_board.values())
        phantom = sum(r["phantom"] for r in self.per_board.values())
        w(f"- sample values checked against mwsim's deterministic signal: {mism} mismatch(es); samples upstream the boards never sent: {phantom}")
        w(f"- `PRAGMA integrity_check`: {'; '.join(self.integrity[:3])}")
        if self.rss:
            kbs = [kb for _, _, kb in self.rss]
            w(f"- RSS of mwgated (every {self.args.rss_interval:.0f} s, {len(self.rss)} samples): first {kbs[0] / 1024:.1f} MB, "
              f"last {kbs[-1] / 1024:.1f} MB, max {max(kbs) / 1024:.1f} MB")
        for pid, first, last, peak, slope, span, clear in self.rss_verdicts:
            w(f"  - pid {pid}: {span:.0f} s after warm-up, {first / 1024:.1f} → {last / 1024:.1f} MB (max {peak / 1024:.1f}), "
              f"trend {slope:+.1f} MB/h: {'GROWTH' if clear else 'no growth'}")
        if not self.rss_verdicts:
            w("  - no mwgated process lived long enough after warm-up for a trend (kills too frequent or run too short)")
        if self.loss_runs:
            w("\nLosses (runs of consecutive samples; times in s since the start of the faults):\n")
            w("| board | samples | first..last index | delivered at | cause |\n|---|---:|---|---|---|")
            for board, a, b, ta, tb, cause in self.loss_runs[:200]:
                w(f"| {board} | {b - a + 1} | {a}..{b} | {ta:+.2f}..{tb:+.2f} s | {cause} |")
            if len(self.loss_runs) > 200:
                w(f"| … | | | | {len(self.loss_runs) - 200} more runs |")
        if self.failures:
            w("\n**Failures**\n")
            for f in self.failures:
                w(f"- {f}")
        if self.notes:
            w("\nNotes:\n")
            for n in self.notes[:30]:
                w(f"- {n}")
        w("\n<details><summary>RSS samples (s since start, MB)</summary>\n")
        w(" ".join(f"{t - self.started:.0f}:{kb / 1024:.1f}" for t, _, kb in self.rss))
        w("\n</details>\n")
        return "\n".join(lines)

    def cleanup(self):
        for thing in ("gnss", "proxy"):
            if hasattr(self, thing):
                getattr(self, thing).stop()
        if hasattr(self, "supervisor") and not self.supervisor.stopping:
            try:
                self.supervisor.stop()
            except Exception:
                pass
        if hasattr(self, "upstream"):
            self.upstream.stop()
        for p in reversed(self.processes):
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        if not self.args.keep and not self.failures:
            subprocess.run(["rm", "-rf", self.work])
        else:
            # mwgated writes no times on stderr: keep each line with the time the driver saw
            # it (s since the start of the faults), to line it up with mwsim's and the faults.
            if hasattr(self, "supervisor") and hasattr(self, "started"):
                with open(f"{self.work}/mwgated-lines.txt", "w") as f:
                    for when, line in list(self.supervisor.lines):
                        f.write(f"{when - self.started:+9.3f} {line}\n")
            log(f"kept {self.work}")


def main():
    parser = argparse.ArgumentParser(description="mwgate soak with injected faults (see docs/soak.md)")
    parser.add_argument("--seconds", type=float, default=600, help="recording time with faults (split between sinks)")
    parser.add_argument("--seed", type=int, default=None, help="fault seed (default: random; printed)")
    parser.add_argument("--sink", choices=["firestore", "postgres", "both"], default="both")
    parser.add_argument("--boards", type=int, default=4)
    parser.add_argument("--fault-interval", type=float, default=12, help="mean seconds between faults")
    parser.add_argument("--restart-delay", type=float, default=5, help="RestartSec of the supervisor (unit: 5 s)")
    parser.add_argument("--rss-interval", type=float, default=5)
    parser.add_argument("--rss-warmup", type=float, default=30)
    parser.add_argument("--drain-timeout", type=float, default=180)
    parser.add_argument("--bin", default=None, help="directory with mwsim, mwgated, mwctl (default: swift build --show-bin-path)")
    parser.add_argument("--nmea", default=os.path.join(ROOT, "..", "shared", "testdata", "nmea", "quectel-l76k-nmea.log"))
    parser.add_argument("--out", default=os.path.join(ROOT, "soak-results", "soak.md"))
    parser.add_argument("--keep", action="store_true", help="keep the work directories")
    args = parser.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 2**31)
    if args.bin is None:
        args.bin = subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True,
                                  check=True).stdout.strip()
    for tool in ("mwsim", "mwgated", "mwctl"):
        if not os.access(f"{args.bin}/{tool}", os.X_OK):
            sys.exit(f"soak: {args.bin}/{tool} is missing (swift build first)")
    sinks = ["firestore", "postgres"] if args.sink == "both" else [args.sink]
    if "firestore" in sinks and not os.access(FIRESTORE, os.X_OK):
        sys.exit(f"soak: the Firestore emulator is not installed ({FIRESTORE})")
    if "postgres" in sinks and not os.access(f"{PGBIN}/postgres", os.X_OK):
        sys.exit(f"soak: PostgreSQL 15 is not installed ({PGBIN})")
    print(f"soak: seed {args.seed} (replay with --seed {args.seed}, or make soak SOAK_SEED={args.seed})", flush=True)
    sections, failed = [], False
    for n, sink in enumerate(sinks):
        soak = Soak(args, sink, args.seconds / len(sinks), args.seed + n, args.out)
        try:
            soak.run()
            section = soak.report()
        except Failure as error:
            soak.failures.append(str(error))
            section = f"## Soak against {sink} (seed {args.seed + n})\n\n- result: **FAIL**: {error}\n"
        except Exception as error:
            soak.failures.append(repr(error))
            section = f"## Soak against {sink} (seed {args.seed + n})\n\n- result: **FAIL**: {error!r}\n"
            import traceback
            traceback.print_exc()
        finally:
            soak.cleanup()
        print(section, flush=True)
        sections.append(section)
        failed = failed or bool(soak.failures)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(f"# mwgate soak ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, seed {args.seed}, "
                f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})\n\n" + "\n".join(sections))
    print(f"soak: report in {args.out}; {'FAIL' if failed else 'PASS'} (seed {args.seed})", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
