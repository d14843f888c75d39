#!/usr/bin/env python3
"""Second peer for the seal benchmark (a diagnostic, not the goal's yardstick): plain sqlite3
running the same transaction as BufferStore.seal -- our schema (copied from the benchmark's
database), auto_vacuum=INCREMENTAL, WAL, synchronous=FULL, the same statements (session
state, next upload order + duplicate check, chunk row with its upload state, open-chunk delete)
and a CRC-32 (zlib). It shows what a seal's extra B-tree pages cost SQLite itself, apart from Swift/GRDB.
Usage: recording_peer_samework.py BLOB SCHEMA_DB OUT_DB COUNT"""
import os, sqlite3, sys, time, uuid, zlib
blob_path, schema_db, db_path, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
blob = open(blob_path, "rb").read()
for suffix in ("", "-wal", "-shm"):
    try: os.remove(db_path + suffix)
    except FileNotFoundError: pass
src = sqlite3.connect(schema_db)
ddl = [r[0] for r in src.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'grdb_%'")]
con = sqlite3.connect(db_path, isolation_level=None)
con.execute("PRAGMA auto_vacuum=INCREMENTAL"); con.execute("VACUUM")
con.execute("PRAGMA journal_mode=WAL"); con.execute("PRAGMA synchronous=FULL")
for d in ddl: con.execute(d)
con.execute("INSERT INTO sessions (id, started_at, start_trigger, state, day) VALUES ('S', 1.8e12, 'control_api', 'recording', '2027-01-15')")
con.execute("INSERT INTO session_summaries VALUES ('S','2027-01-15',0,0,0,'{}','unsynced')")
con.execute("INSERT INTO history_days VALUES ('2027-01-15',1,0,0,0,'{}',0,1,0)")
con.execute("INSERT INTO chunk_id_floor (id, value) VALUES (0, 0)")
start = time.perf_counter()
for seq in range(count):
    crc = zlib.crc32(blob)
    con.execute("BEGIN IMMEDIATE")
    name = str(uuid.uuid4()).upper(); now = time.time() * 1000
    con.execute("SELECT state, data_state FROM sessions WHERE id = ?", ('S',)).fetchone()
    nxt = con.execute("""SELECT coalesce(max(upload_seq), -1) + 1, coalesce(max(board = ?2 AND seq = ?3), 0)
            FROM chunks INDEXED BY chunks_session_upload WHERE session_id = ?1""", ('S', 'B', seq)).fetchone()[0]
    con.execute("""INSERT INTO chunks (id, name, session_id, board, seq, upload_seq, updated_at, point_count, first_ts, last_ts,
                                time_source, missed, crc32, sealed_at, size, points)
            VALUES (max(coalesce((SELECT max(id) FROM chunks), 0), (SELECT value FROM chunk_id_floor WHERE id = 0)) + 1,
                    ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (name, 'S', 'B', seq, nxt, now, 2000, 1.8e12, 1.8e12 + 19990, 'system_clock_synchronised', 0, crc, now, len(blob), blob))
    con.execute("DELETE FROM open_chunks WHERE session_id = ? AND board = ?", ('S', 'B'))
    con.execute("COMMIT")
print("samework_chunks_per_s=%.1f" % (count / (time.perf_counter() - start)))
