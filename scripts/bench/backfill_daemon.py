"""Flash-log downloads of the whole daemon (called by backfill.sh, with mwsim's one MetaMotion R
on a private bus): mwgated as a user runs it (manual sessions, directory sink), notifications
through dbus-daemon on the path DELIVERY ("acquire" or "start-notify"). Prints key=value lines.

logged SECONDS FAST: gyro at 800 Hz logged on the board (backfill = true) for a session of
  SECONDS s, read out at the model's pace (mwsim's 200 notifications/s, 400 entries/s) while it
  records; at `mwctl session stop` the board's readout pace goes to FAST notifications/s
  (io.mwgate.Simulator1.SetReadoutRate), so the rest of the log downloads as fast as mwgated
  takes it: entries/s and samples/s, and mwgated's and dbus-daemon's CPU per 1,000 samples
  over that download; then what the session holds against what the board measured.
gap KEY SECONDS [READOUT] [--down N] [--silent]: gyro streamed at 100 Hz with backfill on; after
  SECONDS s of session the board goes out of range (VanishDevice) for N (8) s and comes back
  (RestoreDevice), or with --silent stays in range with its link up but sends no stream
  notifications for N s (mwsim's Stall: it answers, logs and measures on; mwgated's watchdog
  restarts the stream, then gives the link up and links again): the time from the fault's end to
  the board streaming again and to the gap's last sample stored, how many it backfilled against
  the samples the board measured and did not deliver, mwgated's CPU per 1,000 backfilled samples
  over that span less the stream's own (its rate before the gap), and the stream's rate from
  streaming again to the gap closed (100/s if the readout costs it nothing). After the session's
  stop, its export (`mwctl export`) checked sample by sample: samples missing between its first
  and last point (lost), stored twice (twice), and the gap marks left (marks, marked samples).
  With READOUT (notifications/s, SetReadoutRate before the session) the board reads its log out
  at that pace instead of the model's 200/s. Keys start KEY_.

usage: backfill_daemon.py MWGATED MWCTL WORKDIR BUS_ADDRESS DBUS_PID DELIVERY MODE ARGS...
"""
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vm"))
from document_check import check_documents  # noqa: E402
from mwgated_daemon import Daemon, mwctl_json, schedstat_ns, simulator  # noqa: E402

mwgated, mwctl, work, bus_address, dbus_pid, delivery, mode = sys.argv[1:8]
args = sys.argv[8:]
dbus_pid = int(dbus_pid)
# Two 4-byte entries per three-axis gyro sample (metawear-logging.md §4.2).
ENTRIES_PER_SAMPLE = 2
# mwsim's seed (its default) and signal (backfill.sh runs it with --signal checkable).
SIMULATOR_SEED = 1


def configure(gyro_rate):
    for name in ("state", "run", "etc", "documents"):
        os.makedirs(os.path.join(work, name), exist_ok=True)
    path = os.path.join(work, "etc", "mwgated.toml")
    with open(path, "w") as f:
        f.write(f'[boards]\ngyro_rate = {gyro_rate}\nbackfill = true\nnotifications = "{delivery}"\n\n'
                f'[session]\nmode = "manual"\n\n[sink]\ntype = "directory"\n\n'
                f'[sink.directory]\npath = "{os.path.join(work, "documents")}"\n')
    return path


def board():
    rows = (mwctl_json(mwctl, "status") or {}).get("boards", [])
    return rows[0] if rows else {}


def wait_for(what, predicate, limit):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        row = board()
        if predicate(row):
            return row
        time.sleep(0.2)
    raise SystemExit(f"backfill_daemon: {what} not within {limit} s (last status {board()})")


def streaming(row):
    return row.get("state", "").startswith("streaming")


def measured_samples():
    """Gyro samples the board took so far, streamed or not (mwsim's runs)."""
    runs = simulator(bus_address, "GetMeasuredRuns", "us", 0, "gyro")[0]
    return sum(last - first + 1 for first, last, _, _ in runs)


def delivered_samples():
    runs = simulator(bus_address, "GetDeliveredRuns", "us", 0, "gyro")[0]
    return sum(last - first + 1 for first, last, _, _ in runs)


def session_points():
    db = sqlite3.connect(f"file:{os.path.join(work, 'state', 'buffer.sqlite')}?mode=ro", uri=True)
    try:
        session_id, points = db.execute("SELECT id, point_count FROM sessions ORDER BY started_at DESC LIMIT 1").fetchone()
        return points or db.execute("SELECT coalesce(sum(point_count), 0) FROM chunks WHERE session_id = ?",
                                    (session_id,)).fetchone()[0]
    finally:
        db.close()


def session_check(address):
    """The last session's export checked sample by sample against mwsim's signal
    (document_check.py's check, the export's points as one document): its report, with `marks`
    and `marked` the gap marks left and the samples they claim."""
    db = sqlite3.connect(f"file:{os.path.join(work, 'state', 'buffer.sqlite')}?mode=ro", uri=True)
    try:
        session_id = db.execute("SELECT id FROM sessions ORDER BY started_at DESC LIMIT 1").fetchone()[0]
    finally:
        db.close()
    exported = subprocess.run([mwctl, "export", session_id, "--format", "json"], capture_output=True, text=True, timeout=120)
    if exported.returncode != 0:
        raise SystemExit(f"backfill_daemon: export failed: {exported.stderr}")
    points = json.loads(exported.stdout)["points"]
    report = check_documents([{"board": address, "session_id": session_id, "seq": 0, "data": points}], address, SIMULATOR_SEED)
    marks = [p["missed_before"] for p in points if p.get("missed_before", 0) > 0]
    report["marks"], report["marked"] = len(marks), sum(marks)
    return report


def start_session():
    """`mwctl session start` once the board is connected."""
    wait_for("the board connected", lambda r: r.get("state", "").split(" ")[0] in ("idle", "streaming"), 90)
    started = subprocess.run([mwctl, "session", "start"], capture_output=True, text=True, timeout=60)
    if started.returncode != 0:
        raise SystemExit(f"backfill_daemon: session start failed: {started.stderr}")


class Poller:
    """The board's backfilled-sample count, polled through `mwctl status` in a thread while the
    caller waits for something else (a stop that reads the log to the end), each poll with the
    CPU time mwgated and dbus-daemon had used by then."""

    def __init__(self, pid, interval=0.2):
        self.pid, self.interval, self.polls, self.done = pid, interval, [], threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def poll(self):
        row = board()
        return (time.monotonic(), row.get("gyroSamplesBackfilled") or 0, schedstat_ns(self.pid), schedstat_ns(dbus_pid))

    def run(self):
        while not self.done.is_set():
            self.polls.append(self.poll())
            self.done.wait(self.interval)

    def __enter__(self):
        self.polls.append(self.poll())
        self.thread.start()
        return self

    def __exit__(self, *_):
        self.done.set()
        self.thread.join()

    @property
    def first(self):
        return self.polls[0]

    def last_increase(self):
        """The poll (time, count, mwgated CPU ns, dbus-daemon CPU ns) at which the count last rose."""
        best = self.polls[0]
        for before, poll in zip(self.polls, self.polls[1:]):
            if poll[1] > before[1]:
                best = poll
        return best


def logged(seconds, fast):
    daemon = Daemon(mwgated, configure(800), work).start()
    try:
        start_session()
        t_start = time.monotonic()
        # The in-session download from its second half, when the readouts follow one another.
        time.sleep(seconds / 2)
        b_half, t_half = board().get("gyroSamplesBackfilled") or 0, time.monotonic()
        time.sleep(max(0.0, seconds - (time.monotonic() - t_start)))
        b_end, t_end = board().get("gyroSamplesBackfilled") or 0, time.monotonic()
        print(f"logged_{delivery}_session_s={t_end - t_start:.1f}")
        print(f"logged_{delivery}_in_session_samples_per_s={(b_end - b_half) / (t_end - t_half):.0f}")

        simulator(bus_address, "SetReadoutRate", "uu", 0, fast)
        with Poller(daemon.pid) as poller:
            stopped = subprocess.run([mwctl, "session", "stop"], capture_output=True, text=True, timeout=300)
            t1 = time.monotonic()
        if stopped.returncode != 0:
            print("logged_stop_error=" + " ".join(stopped.stderr.split())[:300])
        t0, b0, cpu0, dbus0 = poller.first
        t_last, b_last, cpu1, dbus1 = poller.last_increase()
        samples, download_s = b_last - b0, t_last - t0
        print(f"logged_{delivery}_after_stop_samples={samples}")
        print(f"logged_{delivery}_after_stop_download_s={download_s:.2f}")
        print(f"logged_{delivery}_stop_s={t1 - t0:.2f}")
        if samples > 0 and download_s > 0:
            print(f"logged_{delivery}_samples_per_s={samples / download_s:.0f}")
            print(f"logged_{delivery}_entries_per_s={samples * ENTRIES_PER_SAMPLE / download_s:.0f}")
            print(f"logged_{delivery}_cpu_ms_per_1000={(cpu1 - cpu0) / 1e6 / samples * 1000:.1f}")
            print(f"logged_{delivery}_dbus_ms_per_1000={(dbus1 - dbus0) / 1e6 / samples * 1000:.1f}")
        print(f"logged_{delivery}_session_points={session_points()}")
        print(f"logged_{delivery}_board_measured={measured_samples()}")
        print(f"logged_{delivery}_backfilled={board().get('gyroSamplesBackfilled') or 0}")
    finally:
        daemon.stop()


def gap(key, seconds, readout=None, down=8.0, silent=False):
    daemon = Daemon(mwgated, configure(100), work).start()
    try:
        if readout:
            simulator(bus_address, "SetReadoutRate", "uu", 0, readout)
        start_session()
        wait_for("the session streaming", streaming, 30)
        # The stream's own CPU rate, over the session's last stretch before the gap.
        time.sleep(max(0.0, seconds - 5))
        c0, w0 = schedstat_ns(daemon.pid), time.monotonic()
        time.sleep(5)
        base_ns_per_s = (schedstat_ns(daemon.pid) - c0) / (time.monotonic() - w0)
        b_before = board().get("gyroSamplesBackfilled") or 0
        if silent:
            simulator(bus_address, "Stall", "ud", 0, down)
            time.sleep(down)
        else:
            simulator(bus_address, "VanishDevice", "u", 0)
            time.sleep(down)
            simulator(bus_address, "RestoreDevice", "u", 0)
        with Poller(daemon.pid, interval=0.5) as poller:
            row = wait_for("streaming again", lambda r: streaming(r) and (r.get("gyroSamplesReceived") or 0) > 0, 60)
            t_streaming, received_streaming = time.monotonic(), row.get("gyroSamplesReceived") or 0
            # Closed: the backfilled count has not moved for 5 s since it last rose. The
            # recorder holds the points after the gap for at most 5 minutes (5 waits of 60 s).
            deadline = time.monotonic() + 330
            received = [(t_streaming, received_streaming)]
            while time.monotonic() < deadline:
                time.sleep(0.5)
                received.append((time.monotonic(), board().get("gyroSamplesReceived") or 0))
                t_last, b_last, _, _ = poller.last_increase()
                if b_last > b_before and time.monotonic() - t_last >= 5:
                    break
        t_back, _, cpu_back, _ = poller.first
        t_last, b_last, cpu_closed, _ = poller.last_increase()
        # The stream's rate from streaming again to the gap closed (the readout's whole span).
        t_read, n_read = min(received, key=lambda sample: abs(sample[0] - t_last))
        received_rate = (n_read - received_streaming) / (t_read - t_streaming) if t_read > t_streaming else 0
        missing = measured_samples() - delivered_samples()
        backfilled = b_last - b_before
        print(f"{key}_backfilled={backfilled}")
        print(f"{key}_missing={missing}")
        print(f"{key}_back_to_streaming_s={t_streaming - t_back:.2f}")
        print(f"{key}_closed_after_s={t_last - t_back:.2f}")
        print(f"{key}_closed_after_streaming_s={t_last - t_streaming:.2f}")
        print(f"{key}_stream_per_s_while_reading={received_rate:.0f}")
        if backfilled > 0:
            own = cpu_closed - cpu_back - base_ns_per_s * (t_last - t_back)
            print(f"{key}_cpu_ms_per_1000={own / 1e6 / backfilled * 1000:.1f}")
            print(f"{key}_stream_cpu_ms_per_s={base_ns_per_s / 1e6:.2f}")
        subprocess.run([mwctl, "session", "stop"], capture_output=True, text=True, timeout=120)
        address = row.get("address", "")
        report = session_check(address)
        print(f"{key}_session_points={report['count']}")
        print(f"{key}_session_backfilled={report['backfilled']}")
        print(f"{key}_lost={sum(count for _, count in report['gaps'])}")
        print(f"{key}_twice={report['duplicates']}")
        print(f"{key}_out_of_order={report['reordered']}")
        print(f"{key}_not_the_boards={report['mismatched']}")
        print(f"{key}_marks={report['marks']}")
        print(f"{key}_marked_samples={report['marked']}")
    finally:
        daemon.stop()


if mode == "logged":
    logged(float(args[0]), int(args[1]))
elif mode == "gap":
    silent = "--silent" in args
    args = [a for a in args if a != "--silent"]
    down = 8.0
    if "--down" in args:
        at = args.index("--down")
        down = float(args[at + 1])
        del args[at:at + 2]
    gap(args[0], float(args[1]), int(args[2]) if len(args) > 2 else None, down=down, silent=silent)
else:
    raise SystemExit(f"backfill_daemon: unknown mode {mode}")
