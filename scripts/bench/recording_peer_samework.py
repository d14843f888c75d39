#!/usr/bin/env python3
"""Second peer for the seal benchmark (a diagnostic, not the goal's yardstick): plain sqlite3
running the same transaction as BufferStore.seal -- our schema (copied from the benchmark's
database), auto_vacuum=INCREMENTAL, WAL, synchronous=FULL, the same statements (chunk row,
open-chunk delete, outbox row, session update, summary and history-day update) and a CRC-32
(zlib). It shows what a seal's extra B-tree pages cost SQLite itself, apart from Swift/GRDB.
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
start = time.perf_counter()
for seq in range(count):
    crc = zlib.crc32(blob)
    con.execute("BEGIN IMMEDIATE")
    name = str(uuid.uuid4()).upper(); now = time.time() * 1000
    con.execute("INSERT INTO chunks (name, session_id, board, seq, point_count, first_ts, last_ts, time_source, missed, crc32, sealed_at, size, points) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (name, 'S', 'B', seq, 2000, 1.8e12, 1.8e12 + 19990, 'system_clock_synchronised', 0, crc, now, len(blob), blob))
    con.execute("DELETE FROM open_chunks WHERE session_id = ? AND board = ?", ('S', 'B'))
    con.execute("INSERT INTO outbox (kind, doc_name, session_id, seq, state, bytes, enqueued_at, updated_at) VALUES (?1, ?2, ?3, (SELECT coalesce(max(seq), -1) + 1 FROM outbox WHERE session_id = ?3), 'pending', ?4, ?5, ?5)", ('realtime_data', name, 'S', len(blob), now))
    con.execute("""UPDATE sessions SET point_count = point_count + ?1,
                boards = CASE WHEN EXISTS (SELECT 1 FROM json_each(boards) WHERE value = ?2) THEN boards
                         ELSE (SELECT json_group_array(value) FROM (SELECT value FROM json_each(boards) UNION SELECT ?2 ORDER BY 1)) END
            WHERE id = ?3""", (2000, 'B', 'S'))
    con.execute("SELECT * FROM session_summaries WHERE session_id = ?", ('S',)).fetchone()
    con.execute("""SELECT s.id, s.day, CASE WHEN s.ended_at IS NULL THEN 0 ELSE s.ended_at - s.started_at END, s.distance_m, s.point_count, coalesce(s.hazards, '{}'),
                   CASE WHEN s.data_state = 'evicted' THEN 'lost' WHEN s.state = 'submitted' AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.session_id = s.id AND o.state != 'sent') THEN 'synced' ELSE 'unsynced' END
            FROM sessions s WHERE s.id = ?""", ('S',)).fetchone()
    con.execute("UPDATE history_days SET samples = samples + ?, synced = synced + ?, unsynced = unsynced + ?, lost = lost + ? WHERE day = ?", (2000, 0, 0, 0, '2027-01-15'))
    con.execute("UPDATE session_summaries SET samples = samples + ?, sync = ? WHERE session_id = ?", (2000, 'unsynced', 'S'))
    con.execute("COMMIT")
print("samework_chunks_per_s=%.1f" % (count / (time.perf_counter() - start)))
