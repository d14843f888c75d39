#!/usr/bin/python3
"""mwgate soak: a whole gateway under injected faults, checked sample by sample.

Starts a private dbus-daemon, mwsim (boards of both chip profiles at 100 Hz), an NMEA replay
served over TCP, a real upstream (Google's Firestore emulator and/or PostgreSQL 15) behind a
fault proxy, and mwgated under a supervisor with systemd's Restart=on-failure semantics. While
sessions are recorded through mwctl, faults chosen by a seeded generator are injected: board
link drops and stalls, a bluetoothd restart, GNSS unplug and return, upstream outage and
dropped responses, a board out of range, kill -9 of mwgated. At the end every gyro sample
the simulated boards took while a session recorded (mwsim's
io.mwgate.Simulator1.GetMeasuredRuns: streamed, or withheld by a stall or a link that was
down) is looked up in the upstream, streamed or backfilled from the board's flash log. With
backfill on (`--backfill`) nothing may be lost; with it off each lost sample must be explained
by a fault window. Duplicates must be 0, every value the board's signal, the buffer must pass
PRAGMA integrity_check and mwgated's RSS must not grow. Exit status 0 only when every check
passes. See docs/soak.md.

Runs with Debian's python3 (python3-dbus): /usr/bin/python3 scripts/soak/soak.py --help
"""
import argparse
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from common import ROOT, FIRESTORE, PGBIN, GYRO_SCALE, UUID, CRASH_BEFORE, CRASH_AFTER, LINK_BEFORE, LINK_AFTER, STALL_AFTER, KILL_BEFORE, SESSION_EDGE, log, Failure
from nmea_server import NMEAServer
from fault_proxy import FaultProxy
from upstreams import Firestore, Postgres
from supervisor import Supervisor
from board_signal import simulator_signal

# --stall-at-stop: how long before a session's planned stop its board's stall begins (seconds).
STALL_BEFORE_STOP = 3.5


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
                              "--model", "mixed", "--quiet", "--seed", str(self.seed),
                              # The checks below compare every sample with this signal.
                              "--signal", "checkable"],
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
        log(f"{self.sink_kind}: seed {self.seed}, {self.seconds:.0f} s, {self.args.boards} boards at 100 Hz, "
            f"backfill {'on' if self.args.backfill else 'off'}, work {self.work}")
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
            f.write(f'[boards]\ngyro_rate = 100\nbackfill = {"true" if self.args.backfill else "false"}\n\n[gnss]\nsource = "tcp://127.0.0.1:{self.gnss.port}"\n\n'
                    f'[session]\nmode = "manual"\nbutton_toggles = false\n\n' + self.upstream.sink_config(self.proxy.port))
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus_address, STATE_DIRECTORY=f"{self.work}/state",
                   RUNTIME_DIRECTORY=f"{self.work}/run", CONFIGURATION_DIRECTORY=f"{self.work}/etc",
                   CREDENTIALS_DIRECTORY=f"{self.work}/credentials")
        env.pop("NOTIFY_SOCKET", None)
        env.pop("MWGATE_JOURNAL_SOCKET", None)
        self.supervisor = Supervisor(f"{self.bin}/mwgated", config, env, f"{self.work}/mwgated.log",
                                     self.args.restart_delay)
        self.wait_ready(90)
        self.started = time.time()
        self.plan = self.make_plan()
        log("fault plan: " + "; ".join(f"{f['kind']}@{f['offset']:.1f}s" + (f",board={f['board']}" if 'board' in f else "")
                                      + (f",for={f['seconds']:.1f}s" if 'seconds' in f else "") for f in self.plan))
        self.loop()
        self.finish()

    def wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.status() if self.supervisor.ready() else None
            # Ready: streaming, or connected with the sensors off until a session starts (the
            # default between sessions).
            ready = [b for b in (s or {}).get("boards", [])
                     if b.get("streaming") or str(b.get("state", "")).startswith("idle")]
            if len(ready) >= self.args.boards:
                return True
            time.sleep(0.5)
        raise Failure(f"not all {self.args.boards} boards connected within {timeout} s (see {self.work}/mwgated.log)")

    def make_plan(self):
        """The faults of the whole run, from the seed alone (replayable)."""
        kinds = [("link-drop", 5), ("stall", 4), ("restart-bluetoothd", 1), ("gnss-unplug", 2),
                 ("upstream-outage", 2), ("drop-responses", 3), ("kill-9", 2), ("out-of-range", 2)]
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
            if kind in ("link-drop", "stall", "out-of-range"):
                step["board"] = self.rng.randrange(self.args.boards)
            if kind == "stall":
                step["seconds"] = round(self.rng.uniform(0.5, 4.0), 2)
            if kind == "gnss-unplug":
                step["seconds"] = round(self.rng.uniform(3, 15), 2)
            if kind == "upstream-outage":
                step["seconds"] = round(self.rng.uniform(5, 25), 2)
            if kind == "drop-responses":
                step["count"] = self.rng.randint(1, 3)
            if kind == "out-of-range":
                step["seconds"] = round(self.rng.uniform(5, 15), 2)
            plan.append(step)
        # Every kind at least once in a run long enough for it.
        present = {s["kind"] for s in plan}
        for i, (kind, _) in enumerate(kinds):
            if kind not in present and self.seconds >= 40:
                offset = round(8 + (self.seconds - quiet_tail - 8) * (i + 0.5) / len(kinds), 2)
                if kind == "kill-9":
                    offset = round(min(offset, self.seconds * KILL_BEFORE), 2)
                step = {"kind": kind, "offset": offset}
                if kind in ("link-drop", "stall", "out-of-range"):
                    step["board"] = i % self.args.boards
                if kind == "stall":
                    step["seconds"] = 2.0
                if kind == "gnss-unplug":
                    step["seconds"] = 8.0
                if kind == "upstream-outage":
                    step["seconds"] = 10.0
                if kind == "drop-responses":
                    step["count"] = 2
                if kind == "out-of-range":
                    step["seconds"] = 8.0
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
            elif self.args.stall_at_stop and "stalled" not in session and now >= session["planned_end"] - STALL_BEFORE_STOP:
                # A stall that outlasts the stop, begun more than SESSION_EDGE before it: what the
                # board took from the stall to the edge is required and only its log holds it.
                session["stalled"] = len(self.sessions) % self.args.boards
                step = {"kind": "stall", "offset": round(now - self.started, 2), "board": session["stalled"],
                        "seconds": STALL_BEFORE_STOP + 2.0, "at-stop": True}
                timers += self.inject(step, session)
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
            elif kind == "out-of-range":
                # The board keeps measuring (and logging) while nobody hears it.
                sim.VanishDevice(self.dbus.UInt32(step["board"]))

                def back(step=step):
                    step["back_at"] = time.time()
                    try:
                        self.simulator().RestoreDevice(self.dbus.UInt32(step["board"]))
                    except Exception as error:
                        self.notes.append(f"board {step['board']} not restored: {error}")
                return [(time.time() + step["seconds"], back)]
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
                # With backfill on, a board may still be read out (a gap its log fills after
                # the survey, as a revision of the session's records): that is data on its way,
                # not lost, so the run waits for it as for the backlog.
                reading = self.args.backfill and any(board.get("flashLogEntriesLeft") for board in s.get("boards", []))
                if b["documents"] == 0 and b["inFlight"] == 0 and s["session"]["state"] == "idle" \
                        and not s["session"].get("awaitingSurvey") and not reading:
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
        self.measured = {}
        self.link_stats = {}
        for index, _, address, profile in self.boards:
            for kind, method, runs_by_board in (("delivered", sim.GetDeliveredRuns, self.delivered),
                                                ("measured", sim.GetMeasuredRuns, self.measured)):
                runs = method(self.dbus.UInt32(index), "gyro")
                runs_by_board[address] = [(int(a), int(b), int(c) / 1e6, int(d) / 1e6) for a, b, c, d in runs]
                with open(f"{self.work}/{kind}-{index}.txt", "w") as f:
                    # mwsim's runs of this board (first..last index, seconds since the start):
                    # handed to mwgated (delivered) or taken by the sensor (measured).
                    for a, b, c, d in runs_by_board[address]:
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
        """Every sample a board took while a session recorded, looked up upstream."""
        by_board = {}
        for d in self.documents:
            by_board.setdefault(d["board"], []).append(d)
        self.per_board = {}
        self.per_window = {}      # (board index, cause) -> {required, streamed, backfilled, lost}
        self.loss_runs = []
        # Required: taken while a session recorded (away from its edges).
        windows = []
        for s in self.sessions:
            if s.get("start") is None or s.get("end") is None:
                continue
            end_edge = 0.0 if s.get("ended_by") == "kill-9" else SESSION_EDGE
            windows.append((s["start"] + SESSION_EDGE, s["end"] - end_edge))
        session_start = {s["id"]: s["start"] for s in self.sessions if s.get("id")}
        for index, _, address, profile in self.boards:
            runs = self.measured.get(address, [])
            seed = index + 1

            def taken_at(i, runs=runs):
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
            backfilled = set()
            mismatches = 0
            unanchored = 0
            for sid, sdocs in sessions.items():
                points = [p for d in sdocs for p in d["data"]]
                if not points:
                    continue
                lows = []
                for p in points:
                    g = p["gyroscope"]
                    raw = [round(g[k] * GYRO_SCALE) for k in ("x", "y", "z")]
                    lows.append((raw[0] & 0xFFFF, raw, bool(p.get("backfilled"))))
                anchor_time = session_start.get(sid)
                first_low = lows[0][0]
                candidates = [i for a, b, _, _ in runs for i in
                              range(a + ((first_low - a) & 0xFFFF), b + 1, 0x10000)]
                if anchor_time is not None and candidates:
                    full = min(candidates, key=lambda i: abs(taken_at(i) - anchor_time))
                elif candidates:
                    full = candidates[0]
                    unanchored += 1
                else:
                    full = first_low
                    unanchored += 1
                previous = None
                for low, raw, marked in lows:
                    if previous is not None:
                        delta = (low - previous) & 0xFFFF
                        full = previous_full + (delta if delta < 0x8000 else delta - 0x10000)
                    previous, previous_full = low, full
                    counts[full] = counts.get(full, 0) + 1
                    if marked:
                        backfilled.add(full)
                    x, y, z = simulator_signal("gyro", seed, full)
                    if (raw[0], raw[1], raw[2]) != (x, y, z):
                        mismatches += 1
            measured = {i for a, b, _, _ in runs for i in range(a, b + 1)}
            delivered = {i for a, b, _, _ in self.delivered.get(address, []) for i in range(a, b + 1)}
            duplicates = sum(c - 1 for c in counts.values() if c > 1)
            phantom = sum(1 for i in counts if i not in measured)
            fault_windows = self.fault_windows(index, address)
            causes = {}
            edge = 0
            required = 0
            loss_runs = []
            for a, b, ta, tb in runs:
                for i in range(a, b + 1):
                    t = ta if b == a else ta + (tb - ta) * (i - a) / (b - a)
                    if not any(w0 <= t <= w1 for w0, w1 in windows):
                        if i not in counts and any(s["start"] - SESSION_EDGE <= t <= s["end"] + SESSION_EDGE
                                                   for s in self.sessions if s.get("end")):
                            edge += 1
                        continue
                    required += 1
                    cause = next((c for w0, w1, c in fault_windows if w0 <= t <= w1), "no fault")
                    row = self.per_window.setdefault((index, cause), {"required": 0, "streamed": 0, "backfilled": 0, "lost": 0})
                    row["required"] += 1
                    if i in counts:
                        row["backfilled" if i in backfilled else "streamed"] += 1
                        continue
                    row["lost"] += 1
                    if cause == "no fault":
                        cause = "unexplained"
                    causes[cause] = causes.get(cause, 0) + 1
                    # Losses as runs of consecutive indices with one cause, for the report.
                    if loss_runs and loss_runs[-1][1] == i - 1 and loss_runs[-1][4] == cause:
                        loss_runs[-1][1], loss_runs[-1][3] = i, t
                    else:
                        loss_runs.append([i, i, t, t, cause])
            for a, b, ta, tb, cause in loss_runs:
                self.loss_runs.append((index, a, b, ta - self.started, tb - self.started, cause))
            self.per_board[address] = {
                "index": index, "profile": profile, "measured": len(measured), "emitted": len(delivered),
                "upstream_points": sum(counts.values()), "backfilled_upstream": len(backfilled),
                "delivered_unique": len(counts), "duplicates": duplicates,
                "phantom": phantom, "mismatches": mismatches, "unanchored": unanchored, "required": required,
                "lost": causes, "edge_not_required": edge, "documents": len(docs),
                "received_by_daemon": self.samples_received.get(address),
            }
            if duplicates:
                self.failures.append(f"board {index}: {duplicates} duplicated sample(s)")
            if phantom:
                self.failures.append(f"board {index}: {phantom} upstream sample(s) the board never took")
            if mismatches:
                self.failures.append(f"board {index}: {mismatches} sample value(s) differ from what the board sent")
            if causes.get("unexplained"):
                self.failures.append(f"board {index}: {causes['unexplained']} sample(s) lost with no fault to explain them")
            if self.args.backfill:
                for cause, n in sorted(causes.items()):
                    if cause != "unexplained":
                        self.failures.append(f"board {index}: {n} sample(s) lost in {cause} windows with backfill on")
        names = [d["name"] for d in self.documents]
        if len(names) != len(set(names)):
            self.failures.append("a document name appears twice upstream")
        self.check_rss()

    def fault_windows(self, board, address):
        """The faults' windows that may hold samples of `board` the stream could not carry,
        as (from, to, cause), checked in this order. A link fault's window runs from just
        before it until the daemon's handshake with the board is complete again (samples a
        board streams from before the reconnect, while the handshake runs, are not for anyone:
        Boards' BoardSession.receive); only backfill from the board's log can fill them."""
        handshake_end = lambda at: (self.supervisor.streaming_after(address, at) or at) + 0.3
        windows = []
        for f in self.faults:
            at, kind = f["at"], f["kind"]
            if kind == "kill-9":
                windows.append((at - CRASH_BEFORE, at + CRASH_AFTER, "kill-9 crash window"))
                windows.append((at, handshake_end(at + self.args.restart_delay), "kill-9 restart handshake"))
            if kind == "link-drop" and f.get("board") == board:
                windows.append((at - LINK_BEFORE, max(at + LINK_AFTER, handshake_end(at)), "link-drop gap"))
            if kind == "restart-bluetoothd":
                windows.append((at - LINK_BEFORE, max(at + LINK_AFTER, handshake_end(at)), "bluetoothd restart gap"))
            if kind == "stall" and f.get("board") == board:
                windows.append((at - LINK_BEFORE, max(at + f["seconds"] + STALL_AFTER, handshake_end(at)), "stall reconnect gap"))
            if kind == "out-of-range" and f.get("board") == board:
                back = f.get("back_at", at + f["seconds"])
                windows.append((at - LINK_BEFORE, max(back + LINK_AFTER, handshake_end(back)), "out-of-range gap"))
        return windows

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
        w(f"- backfill from the boards' flash logs: **{'on' if self.args.backfill else 'off'}**"
          + (" (nothing may be lost)" if self.args.backfill else " (each loss must fall in a fault's window)"))
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
            kind = f["kind"] + (" (at a stop)" if f.get("at-stop") else "")
            kinds[kind] = kinds.get(kind, 0) + 1
        w("| fault | injected |\n|---|---:|")
        for k, n in sorted(kinds.items()):
            w(f"| {k} | {n} |")
        w(f"| (responses dropped by the proxy) | {self.proxy.drops_done} |\n")
        w("| board | profile | measured (taken by the sensor) | emitted (delivered to mwgated) | required (in a session) | upstream | backfilled upstream | duplicated | lost | lost by cause | at session edges (not required) |")
        w("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|")
        tot = {"measured": 0, "emitted": 0, "required": 0, "up": 0, "back": 0, "dup": 0, "lost": 0}
        for address, r in sorted(self.per_board.items(), key=lambda kv: kv[1]["index"]):
            lost = sum(r["lost"].values())
            w(f"| {r['index']} {address} | {r['profile']} | {r['measured']} | {r['emitted']} | {r['required']} | {r['upstream_points']} | "
              f"{r['backfilled_upstream']} | {r['duplicates']} | {lost} | "
              f"{', '.join(f'{k}: {v}' for k, v in sorted(r['lost'].items())) or '-'} | {r['edge_not_required']} |")
            tot["measured"] += r["measured"]
            tot["emitted"] += r["emitted"]
            tot["required"] += r["required"]
            tot["up"] += r["upstream_points"]
            tot["back"] += r["backfilled_upstream"]
            tot["dup"] += r["duplicates"]
            tot["lost"] += lost
        w(f"| **all** | | **{tot['measured']}** | **{tot['emitted']}** | **{tot['required']}** | **{tot['up']}** | "
          f"**{tot['back']}** | **{tot['dup']}** | **{tot['lost']}** | | |\n")
        w("Required samples by the fault window they were taken in (the first window that holds them), "
          "and how they reached the upstream: streamed, backfilled from the board's flash log, or not at all.\n")
        w("| board | window | required | streamed | backfilled | lost |\n|---|---|---:|---:|---:|---:|")
        by_cause = {}
        for (board, cause), row in sorted(self.per_window.items()):
            w(f"| {board} | {cause} | {row['required']} | {row['streamed']} | {row['backfilled']} | {row['lost']} |")
            total = by_cause.setdefault(cause, {"required": 0, "streamed": 0, "backfilled": 0, "lost": 0})
            for k in total:
                total[k] += row[k]
        for cause, row in sorted(by_cause.items()):
            w(f"| **all** | **{cause}** | **{row['required']}** | **{row['streamed']}** | **{row['backfilled']}** | **{row['lost']}** |")
        w("")
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
    parser.add_argument("--stall-at-stop", action="store_true",
                        help=f"stall a board (one after the other) {STALL_BEFORE_STOP:g} s before each session's stop, "
                             "for 2 s past it: its stream is silent at the stop")
    parser.add_argument("--backfill", action=argparse.BooleanOptionalAction, default=False,
                        help="[boards] backfill of mwgated: on, every sample the boards took in a session must "
                             "reach the upstream (streamed or backfilled from their flash logs); off, each loss "
                             "must fall in a fault's window (default: off)")
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
