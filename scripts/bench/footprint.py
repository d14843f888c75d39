"""Daemon footprint driver (called by footprint.sh with a private bus and mwsim running).

Starts mwgated (as packaged) repeatedly with NOTIFY_SOCKET pointing at a datagram socket this
script owns and times spawn -> READY=1; then runs it once for a longer window with the boards
streaming and samples RSS, threads and CPU from /proc. Prints key=value lines; writes
footprint-rss.csv (RSS over time) and footprint-smaps.txt (memory by mapping at the end) into
the data directory.

usage: footprint.py MWGATED MWCTL WORKDIR DATADIR STARTS SECONDS STEADY_AFTER BOARDS
"""
import json
import os
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mwgated_daemon import wait_ready  # noqa: E402

mwgated, mwctl, work, data_dir = sys.argv[1:5]
starts, seconds, steady_after, boards = (int(v) for v in sys.argv[5:9])
tick = os.sysconf("SC_CLK_TCK")
page = os.sysconf("SC_PAGE_SIZE")
config = os.path.join(work, "etc", "mwgated.toml")


def environment(notify_path):
    env = dict(os.environ)
    env.update(NOTIFY_SOCKET=notify_path, STATE_DIRECTORY=os.path.join(work, "state"),
               RUNTIME_DIRECTORY=os.path.join(work, "run"), CONFIGURATION_DIRECTORY=os.path.join(work, "etc"))
    env.pop("JOURNAL_STREAM", None)
    # FOOTPRINT_DAEMON_ENV="K=V ...": extra settings for mwgated, to compare configurations.
    for setting in os.environ.get("FOOTPRINT_DAEMON_ENV", "").split():
        key, _, value = setting.partition("=")
        env[key] = value
    return env


def notify_socket(name):
    path = os.path.join(work, name)
    if os.path.exists(path):
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    return sock, path


def stop(process):
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick


def status_fields(pid):
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            values[key] = rest.strip()
    return values


def kib(value):
    return int(value.split()[0])


def samples_received():
    """Gyro samples mwgated has received from all boards, from its control API."""
    out = subprocess.run([mwctl, "status", "--json"], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        return None, 0
    status = json.loads(out.stdout)
    total, streaming = 0, 0

    def walk(node):
        nonlocal total, streaming
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("gyroSamplesReceived", "gyro_samples_received") and isinstance(value, int):
                    total += value
                if key == "streaming" and value is True:
                    streaming += 1
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
    walk(status)
    return total, streaming


def smaps_by_mapping(pid):
    """RSS per mapping name (anonymous heap/stack/arena regions grouped), largest first."""
    groups, current = {}, None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            first = line.split()
            if not first:
                continue
            if "-" in first[0] and not first[0].endswith(":"):
                start, end = (int(x, 16) for x in first[0].split("-"))
                name = first[5] if len(first) > 5 else "[anon]"
                perms = first[1]
                size = (end - start) // 1024
                if name == "[anon]":
                    # glibc's per-thread malloc arenas are heaps aligned to 64 MiB; pthread
                    # stacks are 8 MiB (rlimit) beside a guard page.
                    if start % (64 << 20) == 0:
                        name = "[anon: malloc arena heap]"
                    elif size == 8192 and perms.startswith("rw"):
                        name = "[anon: 8 MiB thread stack]"
                    else:
                        name = f"[anon {perms}]"
                current = name
                groups.setdefault(current, [0, 0, 0])
                groups[current][2] += 1
            elif first[0] == "Rss:" and current is not None:
                groups[current][0] += int(first[1])
            elif first[0] == "Private_Dirty:" and current is not None:
                groups[current][1] += int(first[1])
    return sorted(groups.items(), key=lambda item: -item[1][0])


def rollup(pid):
    values = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
                values[parts[0][:-1]] = int(parts[1])
    return values


def threads_by_name(pid):
    """{thread name: (threads, voluntary context switches)}: each switch is a sleep, so a wake-up after it."""
    threads = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                switches = next(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches:"))
        except (OSError, StopIteration):
            continue
        count, total = threads.get(name, (0, 0))
        threads[name] = (count + 1, total + switches)
    return threads


# 1. Start to READY=1, median of several starts (the first creates the state database).
ready_ms = []
sock, path = notify_socket("notify.sock")
for i in range(starts):
    t0 = time.monotonic()
    process = subprocess.Popen([mwgated, "--config", config], env=environment(path),
                               stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, f"start-{i}.log"), "w"))
    ready = wait_ready(sock, process, 30.0)
    if ready is None:
        stop(process)
        sys.exit(f"footprint: mwgated did not send READY=1 (start {i}); see {work}/start-{i}.log:\n"
                 + open(os.path.join(work, f"start-{i}.log")).read()[-2000:])
    ready_ms.append((ready - t0) * 1000)
    stop(process)
    time.sleep(0.5)
print("ready_ms_all=" + " ".join(f"{v:.1f}" for v in ready_ms))
print(f"ready_first_ms={ready_ms[0]:.1f}")
print(f"ready_median_ms={statistics.median(ready_ms):.1f}")

# 2. Steady state with the boards streaming.
process = subprocess.Popen([mwgated, "--config", config], env=environment(path),
                           stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "run.log"), "w"))
if wait_ready(sock, process, 30.0) is None:
    stop(process)
    sys.exit("footprint: mwgated did not become ready:\n" + open(os.path.join(work, "run.log")).read()[-2000:])
pid = process.pid
t0 = time.monotonic()
streaming = 0
while time.monotonic() - t0 < 60:
    _, streaming = samples_received()
    if streaming >= boards:
        break
    time.sleep(0.5)
print(f"boards_streaming={streaming}")
if streaming < boards:
    print(f"footprint: only {streaming} of {boards} boards streaming after 60 s", file=sys.stderr)

timeline = []
t_stream = time.monotonic()
steady_cpu = steady_samples = None
while True:
    now = time.monotonic() - t_stream
    st = status_fields(pid)
    timeline.append((now, kib(st["VmRSS"]), int(st["Threads"])))
    if steady_cpu is None and now >= steady_after:
        steady_samples, _ = samples_received()
        steady_cpu = cpu_seconds(pid)
        steady_threads = threads_by_name(pid)
        steady_at = now
    if now >= seconds:
        break
    time.sleep(1.0)
end_samples, streaming_end = samples_received()
end_cpu = cpu_seconds(pid)
end_threads = threads_by_name(pid)
end_at = time.monotonic() - t_stream
st = status_fields(pid)
roll = rollup(pid)
mappings = smaps_by_mapping(pid)
steady = [rss for t, rss, _ in timeline if t >= steady_after]
print(f"window_s={end_at - steady_at:.1f}")
print(f"rss_steady_kib={int(statistics.median(steady))}")
print(f"rss_end_kib={kib(st['VmRSS'])}")
print(f"rss_max_kib={kib(st['VmHWM'])}")
print(f"rss_anon_kib={kib(st['RssAnon'])}")
print(f"rss_file_kib={kib(st['RssFile'])}")
print(f"pss_kib={roll.get('Pss', 0)}")
print(f"private_dirty_kib={roll.get('Private_Dirty', 0)}")
print(f"threads={st['Threads']}")
print("thread_names=" + ", ".join(f"{name}×{count}" for name, (count, _) in sorted(end_threads.items())))
samples = (end_samples or 0) - (steady_samples or 0)
cpu = end_cpu - steady_cpu
print(f"samples_in_window={samples}")
print(f"samples_per_s={samples / (end_at - steady_at):.1f}")
print(f"cpu_s_in_window={cpu:.2f}")
print(f"cpu_ms_per_1000_samples={cpu * 1000 / samples * 1000:.2f}" if samples > 0 else "cpu_ms_per_1000_samples=nan")
print(f"boards_streaming_end={streaming_end}")
# Wake-ups over the window (threads that ended meanwhile are left out): every hand-over
# between the cooperative pool and a thread of mwgated's own costs one.
window = end_at - steady_at
wakeups = {name: max(0, switches - steady_threads.get(name, (0, 0))[1]) / window for name, (_, switches) in end_threads.items()}
print(f"wakeups_per_s={sum(wakeups.values()):.1f}")
print(f"wakeups_recording_per_s={sum(v for k, v in wakeups.items() if k.startswith('mwgate-recordin')):.1f}")
print("wakeups_by_thread=" + ", ".join(f"{name} {rate:.1f}/s" for name, rate in sorted(wakeups.items(), key=lambda kv: -kv[1]) if rate >= 0.05))
# What of mwgated's own binary is resident, by section and origin (readelf and nm needed).
try:
    with open(os.path.join(data_dir, "footprint-resident.txt"), "w") as f:
        subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "footprint_resident.py"),
                        str(pid), mwgated], stdout=f, stderr=subprocess.STDOUT, timeout=120)
except (OSError, subprocess.SubprocessError) as error:
    print(f"footprint: no resident breakdown: {error}", file=sys.stderr)
# FOOTPRINT_INSPECT="command args": run with mwgated's pid appended before it is stopped (for
# example a pagemap walk), its output saved as footprint-inspect.txt in the data directory.
if os.environ.get("FOOTPRINT_INSPECT"):
    with open(os.path.join(data_dir, "footprint-inspect.txt"), "w") as f:
        subprocess.run(os.environ["FOOTPRINT_INSPECT"].split() + [str(pid)], stdout=f, stderr=subprocess.STDOUT)
stop(process)

with open(os.path.join(data_dir, "footprint-rss.csv"), "w") as f:
    f.write("seconds,rss_kib,threads\n")
    f.writelines(f"{t:.1f},{rss},{n}\n" for t, rss, n in timeline)
with open(os.path.join(data_dir, "footprint-smaps.txt"), "w") as f:
    f.write(f"{'rss KiB':>9} {'dirty KiB':>9} {'maps':>5}  mapping\n")
    for name, (rss, dirty, count) in mappings[:25]:
        f.write(f"{rss:9d} {dirty:9d} {count:5d}  {name}\n")
