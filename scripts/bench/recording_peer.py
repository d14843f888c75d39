#!/usr/bin/env python3
"""Peer for the seal benchmark: plain sqlite3 writing the same chunk blob with the same
durability (WAL, synchronous=FULL, one transaction per chunk). Prints chunks/s, median latency and CPU per seal."""
import os, sqlite3, sys, time
blob_path, db_path, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
blob = open(blob_path, "rb").read()
for suffix in ("", "-wal", "-shm"):
    try: os.remove(db_path + suffix)
    except FileNotFoundError: pass
con = sqlite3.connect(db_path, isolation_level=None)
con.execute("PRAGMA journal_mode=WAL")
con.execute("PRAGMA synchronous=FULL")
con.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY, name TEXT UNIQUE, seq INTEGER, points BLOB)")
lat = []
cpu0 = time.process_time()
start = time.perf_counter()
for seq in range(count):
    t0 = time.perf_counter()
    con.execute("BEGIN IMMEDIATE")
    con.execute("INSERT INTO chunks (name, seq, points) VALUES (?, ?, ?)", ("%032x" % seq, seq, blob))
    con.execute("COMMIT")
    lat.append((time.perf_counter() - t0) * 1000)
elapsed = time.perf_counter() - start
cpu = time.process_time() - cpu0
lat.sort()
print("peer_chunks_per_s=%.1f" % (count / elapsed))
print("peer_median_ms=%.3f" % lat[len(lat) // 2])
print("peer_cpu_ms_per_seal=%.3f" % (cpu * 1000 / count))
