"""Field endurance driver (called by endurance.sh with a private bus and mwsim's 4 boards up).

Runs mwgated as a user runs it (manual sessions, directory sink) and measures, from /proc:
1. idle: boards connected and no session, for IDLE seconds: CPU (every thread's schedstat run
   time, and utime + stime), wake-ups (voluntary + nonvoluntary context switches of all
   threads), notifications the simulated boards delivered (mwsim GetStats), and the RSS;
2. a session started with `mwctl session start`: time until the first sample reaches it;
3. the session recorded for SESSION seconds, stopped, the sink drained: bytes mwgated wrote
   to disk (/proc/PID/io write_bytes), the bytes of the documents the directory sink wrote
   (the product, shown apart), the bytes the buffer stores for the session, all per sample.
Prints key=value lines.

usage: endurance.py MWGATED MWCTL WORKDIR BUS_ADDRESS BOARDS IDLE SESSION
"""
import glob
import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mwgated_daemon import environment, mwctl_json, wait_ready  # noqa: E402

mwgated, mwctl, work, bus_address = sys.argv[1:5]
boards, idle_seconds, session_seconds = (int(v) for v in sys.argv[5:8])
tick = os.sysconf("SC_CLK_TCK")
config = os.path.join(work, "etc", "mwgated.toml")
documents = os.path.join(work, "documents")


def board_rows():
    status = mwctl_json(mwctl, "status") or {}
    return status.get("boards", [])


def by_thread(pid):
    """(run time ns, context switches) of each live thread, by thread name/tid."""
    out = {}
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(f"{task}/comm") as f:
                name = f.read().strip()
            with open(f"{task}/schedstat") as f:
                run_ns = int(f.read().split()[0])
            with open(f"{task}/status") as f:
                n = sum(int(line.split()[1]) for line in f
                        if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")))
        except OSError:
            continue
        out[f"{name}/{os.path.basename(task)}"] = (run_ns, n)
    return out


def stat_cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick


def write_bytes(pid):
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("write_bytes:"):
                return int(line.split()[1])
    return 0


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def notifications_delivered():
    total = 0
    for index in range(boards):
        out = subprocess.run(["busctl", f"--address={bus_address}", "--json=short", "call", "io.mwgate.Simulator",
                              "/io/mwgate/Simulator1", "io.mwgate.Simulator1", "GetStats", "u", str(index)],
                             capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            return None
        stats = json.loads(out.stdout)["data"][0]
        total += int(stats["NotificationsDelivered"]["data"])
    return total


def directory_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def start_trace(pid):
    """ENDURANCE_TRACE=FILE: strace mwgated's writes during the session (slows it; diagnosis only)."""
    path = os.environ.get("ENDURANCE_TRACE")
    if not path:
        return None
    tracer = subprocess.Popen(["strace", "-f", "-y", "-qq", "-e", "trace=write,pwrite64,pwritev,writev,fsync,fdatasync,ftruncate",
                               "-p", str(pid), "-o", path], stderr=subprocess.DEVNULL)
    time.sleep(1)
    return (tracer, path)


def stop_trace(tracer):
    """Prints the bytes written and the syncs per file from the trace."""
    if tracer is None:
        return
    process, path = tracer
    process.terminate()
    process.wait()
    import re
    by_file, syncs, calls = {}, {}, {}
    pattern = re.compile(r'^\d+\s+(\w+)\((\d+)<([^>]*)>.*\)\s+=\s+(-?\d+)')
    for line in open(path, errors="replace"):
        m = pattern.match(line)
        if not m:
            continue
        call, _, name, result = m.group(1), m.group(2), m.group(3), int(m.group(4))
        key = re.sub(r"/tmp/mwgate-bench\.\w+/", "", name)
        if call in ("fsync", "fdatasync"):
            syncs[key] = syncs.get(key, 0) + 1
        elif call != "ftruncate" and result > 0:
            by_file[key] = by_file.get(key, 0) + result
            calls[key] = calls.get(key, 0) + 1
    for key in sorted(set(by_file) | set(syncs), key=lambda k: -by_file.get(k, 0))[:12]:
        print(f"trace_file={key} bytes={by_file.get(key, 0)} writes={calls.get(key, 0)} syncs={syncs.get(key, 0)}")


def checkpoint_owed(database):
    """Bytes the next checkpoint will write into the database file for the WAL frames not yet
    copied there (a window shorter than the checkpoint interval would otherwise never see them):
    the distinct 4 KiB file blocks their pages fall in, as /proc/PID/io counts dirtied pages."""
    import struct
    try:
        with open(database + "-wal", "rb") as f:
            wal = f.read()
        with open(database + "-shm", "rb") as f:
            shm = f.read(136)
    except OSError:
        return 0
    if len(wal) < 32 or len(shm) < 100:
        return 0
    page_size, salt = struct.unpack(">I", wal[8:12])[0], wal[16:24]
    max_frame = struct.unpack("<I", shm[16:20])[0]       # WalIndexHdr.mxFrame (native order)
    backfilled = struct.unpack("<I", shm[96:100])[0]     # WalCkptInfo.nBackfill
    blocks = set()
    for frame in range(backfilled, max_frame):
        offset = 32 + frame * (24 + page_size)
        header = wal[offset:offset + 24]
        if len(header) < 24 or header[8:16] != salt:
            break
        page = struct.unpack(">I", header[0:4])[0]
        first, last = (page - 1) * page_size // 4096, (page * page_size - 1) // 4096
        blocks.update(range(first, last + 1))
    return len(blocks) * 4096


notify_path = os.path.join(work, "notify.sock")
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(notify_path)
process = subprocess.Popen([mwgated, "--config", config], env=environment(work, notify_path),
                           stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "mwgated.log"), "w"))
try:
    if not wait_ready(sock, process):
        sys.exit("endurance: mwgated did not become ready:\n" + open(os.path.join(work, "mwgated.log")).read()[-2000:])
    pid = process.pid
    # Connected: every board past its handshake (idle with sensors off, or streaming).
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        rows = board_rows()
        if sum(1 for b in rows if b.get("state", "").split(" ")[0] in ("streaming", "idle")) >= boards:
            break
        time.sleep(0.5)
    print("board_states=" + ",".join(b.get("state", "?").split(" ")[0] for b in board_rows()))
    time.sleep(5)  # handshake stragglers, first battery reads

    # The notify socket is read for the rest of the run, as systemd reads it: a full socket
    # would block the daemon's sd_notify sends (and with them a thread of its pool).
    pings = []
    sock.settimeout(None)

    def read_notifications():
        while True:
            try:
                message = sock.recv(4096).decode(errors="replace")
            except OSError:
                return
            if "WATCHDOG=1" in message.split("\n"):
                pings.append(time.monotonic())

    threading.Thread(target=read_notifications, daemon=True).start()

    # 1. Idle.
    n0 = notifications_delivered()
    threads0 = by_thread(pid)
    st0 = stat_cpu_seconds(pid)
    t0 = time.monotonic()
    rss = []
    while time.monotonic() - t0 < idle_seconds:
        rss.append(rss_kib(pid))
        time.sleep(1.0)
    elapsed = time.monotonic() - t0
    watchdog_pings = sum(1 for t in pings if t0 <= t <= t0 + elapsed)
    threads1 = by_thread(pid)
    # Threads that ended in the window took their counts with them: count the threads alive
    # at the end, from their start values (0 for threads born in the window).
    run1, run0 = sum(v[0] for v in threads1.values()), sum(threads0.get(k, (0, 0))[0] for k in threads1)
    sw1, sw0 = sum(v[1] for v in threads1.values()), sum(threads0.get(k, (0, 0))[1] for k in threads1)
    by_thread1 = {k: v[1] for k, v in threads1.items()}
    by_thread0 = {k: v[1] for k, v in threads0.items()}
    st1 = stat_cpu_seconds(pid)
    n1 = notifications_delivered()
    print(f"idle_window_s={elapsed:.1f}")
    print(f"idle_cpu_ms_per_s={(run1 - run0) / 1e6 / elapsed:.3f}")
    print(f"idle_stat_cpu_ms_per_s={(st1 - st0) * 1000 / elapsed:.2f}")
    print(f"idle_wakeups_per_s={(sw1 - sw0) / elapsed:.2f}")
    print(f"idle_watchdog_pings={watchdog_pings}")
    busiest = sorted(((by_thread1[k] - by_thread0.get(k, 0), k) for k in by_thread1), reverse=True)[:6]
    print("idle_wakeups_by_thread=" + ", ".join(f"{k} {n / elapsed:.2f}/s" for n, k in busiest if n > 0))
    print(f"idle_threads={len(os.listdir(f'/proc/{pid}/task'))}")
    print(f"idle_rss_kib={sorted(rss)[len(rss) // 2] if rss else 0}")
    if n0 is not None and n1 is not None:
        print(f"idle_notifications_per_min={(n1 - n0) * 60 / elapsed:.1f}")

    # 2. Session start to first sample (status polled as fast as mwctl answers).
    before_docs = directory_bytes(documents)
    tracer = start_trace(pid)
    wb0 = write_bytes(pid)
    t_start = time.monotonic()
    started = subprocess.run([mwctl, "session", "start"], capture_output=True, text=True, timeout=30)
    if started.returncode != 0:
        sys.exit(f"endurance: session start failed: {started.stderr}")
    first, all_boards = None, None
    while time.monotonic() - t_start < 10 and all_boards is None:
        counts = [b.get("gyroSamplesInSession", 0) for b in board_rows()]
        now = time.monotonic() - t_start
        if first is None and any(c > 0 for c in counts):
            first = now
        if len(counts) >= boards and all(c > 0 for c in counts):
            all_boards = now
    print(f"first_sample_ms={first * 1000:.0f}" if first is not None else "first_sample_ms=nan")
    print(f"all_boards_first_sample_ms={all_boards * 1000:.0f}" if all_boards is not None else "all_boards_first_sample_ms=nan")

    # 3. Recording.
    # Every 10 s the boards' samples so far: a stall shows here, not only in the totals.
    progress = []
    while time.monotonic() - t_start < session_seconds:
        time.sleep(min(10, max(0, session_seconds - (time.monotonic() - t_start))))
        progress.append(sum(b.get("gyroSamplesInSession", 0) for b in board_rows()))
    print("session_progress=" + ",".join(str(n) for n in progress))
    rss_session = rss_kib(pid)
    stopped = subprocess.run([mwctl, "session", "stop"], capture_output=True, text=True, timeout=180)
    if stopped.returncode != 0:
        print("session_stop_error=" + " ".join(stopped.stderr.split())[:300])
    # The sink drains what the seals queued (the stop seals the last chunks).
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        backlog = ((mwctl_json(mwctl, "status") or {}).get("backlog") or {})
        if backlog.get("documents", 1) == 0:
            break
        time.sleep(1)
    time.sleep(2)
    wb1 = write_bytes(pid)
    owed = checkpoint_owed(os.path.join(work, "state", "buffer.sqlite"))
    stop_trace(tracer)
    docs = directory_bytes(documents) - before_docs
    db = sqlite3.connect(f"file:{os.path.join(work, 'state', 'buffer.sqlite')}?mode=ro", uri=True)
    session_id, points = db.execute("SELECT id, point_count FROM sessions ORDER BY started_at DESC LIMIT 1").fetchone()
    # A session the stop did not reach (a daemon too slow to answer) counts its sealed points.
    points = points or db.execute("SELECT coalesce(sum(point_count), 0) FROM chunks WHERE session_id = ?", (session_id,)).fetchone()[0]
    stored = db.execute("SELECT coalesce(sum(size), 0) FROM chunks WHERE session_id = ?", (session_id,)).fetchone()[0]
    db.close()
    print(f"session_s={session_seconds}")
    print(f"session_rss_kib={rss_session}")
    print(f"samples={points}")
    print(f"write_bytes={wb1 - wb0}")
    print(f"checkpoint_owed_bytes={owed}")
    print(f"document_bytes={docs}")
    print(f"buffer_stored_bytes={stored}")
finally:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
