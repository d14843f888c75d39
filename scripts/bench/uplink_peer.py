"""Plain-client peers for the uplink benchmark: send the same Firestore commit bodies with
requests (one keep-alive session), or insert the same rows with psycopg2 (one transaction per
commit group, same statements). Prints key=value lines: wall time and this process's CPU.
`warmup URL BODIES N` sends the first N bodies, unmeasured, to warm a fresh emulator."""
import json
import os
import resource
import sys
import time


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def write_timeline(sink, timeline):
    """Documents stored over time, for the report's backlog-drain plot (MWBENCH_DATA_DIR):
    when each commit completed, its document total, and when it was started."""
    directory = os.environ.get("MWBENCH_DATA_DIR")
    if directory:
        with open(os.path.join(directory, f"uplink-peer-{sink}-timeline.csv"), "w") as f:
            f.write("seconds,documents,started\n")
            f.writelines(f"{s:.4f},{d},{b:.4f}\n" for s, d, b in timeline)


def load_bodies(url, path):
    bodies = [line.rstrip("\n").encode() for line in open(path, encoding="utf-8") if line.strip()]
    # The bodies name documents in projects/bench-peer; each drain writes its own project.
    project = url.split("/projects/")[1].split("/")[0]
    return [b.replace(b'"projects/bench-peer/', b'"projects/' + project.encode() + b'/') for b in bodies]


HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer owner"}


def warmup(url, path, commits):
    """Warms a fresh emulator's JIT before a measured drain (ours or the peer's, alike)."""
    import requests
    session = requests.Session()
    for body in load_bodies(url, path)[:commits]:
        r = session.post(url, data=body, headers=HEADERS, timeout=120)
        if r.status_code != 200:
            sys.exit(f"warm-up commit failed: {r.status_code} {r.text[:300]}")


def firestore(url, path):
    import requests
    bodies = load_bodies(url, path)
    session = requests.Session()
    docs = 0
    timeline = [(0.0, 0, 0.0)]
    c0, t0 = cpu(), time.perf_counter()
    for body in bodies:
        started = time.perf_counter() - t0
        r = session.post(url, data=body, headers=HEADERS, timeout=120)
        if r.status_code != 200:
            sys.exit(f"peer commit failed: {r.status_code} {r.text[:300]}")
        docs += len(r.json().get("writeResults", []))
        timeline.append((time.perf_counter() - t0, docs, started))
    wall, used = time.perf_counter() - t0, cpu() - c0
    write_timeline("firestore", timeline)
    print(f"peer_firestore_documents={docs}")
    print(f"peer_firestore_wall_s={wall:.3f}")
    print(f"peer_firestore_cpu_s={used:.3f}")


REALTIME = """INSERT INTO realtime_data (name, session_id, board, seq, schema_version, point_count, data)
VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb) ON CONFLICT (name) DO NOTHING"""
RECORDS = """INSERT INTO records (name, user_id, "timestamp", hazards, gscope_data, no_hazard, schema_version, session_id,
boards, "start", "end", point_count, time_source)
VALUES (%s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s, %s::jsonb, %s, %s, %s, %s) ON CONFLICT (name) DO NOTHING"""


def postgres(port, path, dbname):
    import psycopg2
    groups = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname=dbname)
    docs = 0
    timeline = [(0.0, 0, 0.0)]
    c0, t0 = cpu(), time.perf_counter()
    for group in groups:
        started = time.perf_counter() - t0
        with conn:
            with conn.cursor() as cur:
                for row in group:
                    cur.execute(REALTIME if row[0] == "realtime_data" else RECORDS, row[1:])
                    docs += 1
        timeline.append((time.perf_counter() - t0, docs, started))
    wall, used = time.perf_counter() - t0, cpu() - c0
    write_timeline("postgresql", timeline)
    conn.close()
    print(f"peer_postgresql_documents={docs}")
    print(f"peer_postgresql_wall_s={wall:.3f}")
    print(f"peer_postgresql_cpu_s={used:.3f}")


if __name__ == "__main__":
    if sys.argv[1] == "firestore":
        firestore(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "warmup":
        warmup(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        postgres(int(sys.argv[2]), sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "peer")
