"""Plain-client peers for the uplink benchmark: send the same Firestore commit bodies with
requests (one keep-alive session), or insert the same rows with psycopg2 (one transaction per
commit group, same statements). Prints key=value lines: wall time and this process's CPU."""
import json
import os
import resource
import sys
import time


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def write_timeline(sink, timeline):
    """Documents stored over time, for the report's backlog-drain plot (MWBENCH_DATA_DIR)."""
    directory = os.environ.get("MWBENCH_DATA_DIR")
    if directory:
        with open(os.path.join(directory, f"uplink-peer-{sink}-timeline.csv"), "w") as f:
            f.write("seconds,documents\n")
            f.writelines(f"{s:.4f},{d}\n" for s, d in timeline)


def firestore(url, path):
    import requests
    bodies = [line.rstrip("\n").encode() for line in open(path, encoding="utf-8") if line.strip()]
    # The bodies name documents in projects/bench-peer; each round writes its own project.
    project = url.split("/projects/")[1].split("/")[0]
    bodies = [b.replace(b'"projects/bench-peer/', b'"projects/' + project.encode() + b'/') for b in bodies]
    session = requests.Session()
    headers = {"Content-Type": "application/json", "Authorization": "Bearer owner"}
    docs = 0
    timeline = [(0.0, 0)]
    c0, t0 = cpu(), time.perf_counter()
    for body in bodies:
        r = session.post(url, data=body, headers=headers, timeout=120)
        if r.status_code != 200:
            sys.exit(f"peer commit failed: {r.status_code} {r.text[:300]}")
        docs += len(r.json().get("writeResults", []))
        timeline.append((time.perf_counter() - t0, docs))
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
    timeline = [(0.0, 0)]
    c0, t0 = cpu(), time.perf_counter()
    for group in groups:
        with conn:
            with conn.cursor() as cur:
                for row in group:
                    cur.execute(REALTIME if row[0] == "realtime_data" else RECORDS, row[1:])
                    docs += 1
        timeline.append((time.perf_counter() - t0, docs))
    wall, used = time.perf_counter() - t0, cpu() - c0
    write_timeline("postgresql", timeline)
    conn.close()
    print(f"peer_postgresql_documents={docs}")
    print(f"peer_postgresql_wall_s={wall:.3f}")
    print(f"peer_postgresql_cpu_s={used:.3f}")


if __name__ == "__main__":
    if sys.argv[1] == "firestore":
        firestore(sys.argv[2], sys.argv[3])
    else:
        postgres(int(sys.argv[2]), sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "peer")
