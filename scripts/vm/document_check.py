#!/usr/bin/env python3
"""Checks a board's gyro samples in the directory sink's documents against mwsim's signal:
sample by sample, one session at a time.

Used by the VM scenarios (scenario.py) and, on the host, on an outbox the bench copied out of
the VM: document_check.py OUTBOX ADDRESS SEED [--resets] prints the report as JSON.

Each session is checked on its own: its documents in `seq` order, its points in document order.
`seq` counts from 0 in every session, so documents of two sessions ordered by `seq` alone
interleave, and every point of the earlier-numbered session that lands after a later one counts
as out of order: what the bench saw in two runs (682 and 2,433 samples, exactly the points of the
short control session its idle measurement records before the link drops)."""
import json
import os
import sys

# In the VM board_signal.py sits beside this file; in the repository it is scripts/soak's.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "soak"))
from board_signal import simulator_signal  # noqa: E402

GYRO_SCALE = 16.4  # LSB per °/s at ±2000 °/s (mwgated's default range)


def read_documents(outbox):
    """Every document (parsed JSON) under `outbox`; a half-written file is skipped."""
    docs = []
    for root, _, files in os.walk(outbox):
        for name in sorted(files):
            if name.endswith(".json"):
                with open(os.path.join(root, name)) as f:
                    try:
                        docs.append(json.load(f))
                    except ValueError:
                        pass
    return docs


def _sessions(docs, address, session_id):
    """The board's documents grouped by session, each in seq order; sessions in the order of
    their first point's time."""
    by_session = {}
    for d in docs:
        if str(d.get("board", "")).upper() != address.upper():
            continue
        session = d.get("session_id", "")
        if session_id is not None and session != session_id:
            continue
        by_session.setdefault(session, []).append(d)
    for session_docs in by_session.values():
        session_docs.sort(key=lambda d: d.get("seq", 0))

    def first_time(session):
        for d in by_session[session]:
            for p in d.get("data", []):
                if p.get("gyroscope"):
                    return p["gyroscope"].get("timestamp", 0)
        return 0
    return [(s, by_session[s]) for s in sorted(by_session, key=lambda s: (first_time(s), s))]


def _in_runs(index, runs):
    """Whether sample `index` (its low 16 bits) lies in one of `runs`, (first, last) 16-bit."""
    low = index & 0xFFFF
    return any((low - first) & 0xFFFF <= (last - first) & 0xFFFF for first, last in runs)


def _fill_hole(holes, index):
    """Takes `index` out of the hole ([first, count, time before]) it lies in, splitting it when
    inside; returns `index`, or None when no hole holds it (then it is a sample out of order)."""
    for position, (first, count, after) in enumerate(holes):
        if first <= index < first + count:
            rest = [[first, index - first, after], [index + 1, first + count - index - 1, after]]
            holes[position:position + 1] = [hole for hole in rest if hole[1] > 0]
            return index
    return None


def check_documents(docs, address, seed, session_id=None, resets=False, sent=None):
    """The report: count, duplicates, reordered (index behind the previous sample's),
    time_backwards (a timestamp before the previous point's), mismatched (values not the
    model's), gaps (first missing index, how many), gap_after (for each gap, the time of the
    point before it, ms, or None), sessions, and the first out-of-order
    sample (session, seq, position in its document, previous index, its index). With `resets`,
    a board whose numbering starts again near 0 (power cycle) begins a new run instead of
    counting as reordered.
    backfilled: points marked `backfilled` (the flash log filled them in). With `sent`, the
    runs of samples the board handed to its bluetoothd ((first, last), 16-bit; mwsim.log's
    summary): unsent_unmarked counts points the board never sent over the link that are not
    marked backfilled (the mark is wrong), with the first few in unsent_unmarked_first;
    sent_backfilled counts marked points the board did send (the stream lost them on the way).
    false_marks counts points whose gap mark (`missed_before`) says samples are missing before
    them where none is (their index follows the previous point's), false_marked_samples what
    those marks add up to, false_marks_first the first few as (index, time ms, mark, gap_ms);
    over_marks counts marks after a real gap that claim more samples than are missing.
    filled_late: points of correction chunks, marked backfilled, that came after the session's
    later points and fill a hole left before them; they count as samples, not as out of order,
    and the hole they fill is no longer a gap. A point behind the stream that fills no hole is
    out of order."""
    report = {"count": 0, "duplicates": 0, "reordered": 0, "time_backwards": 0, "mismatched": 0, "gaps": [],
              "gap_after": [], "sessions": 0, "first_out_of_order": None, "backfilled": 0, "filled_late": 0,
              "unsent_unmarked": 0, "unsent_unmarked_first": [], "sent_backfilled": 0, "false_marks": 0,
              "false_marked_samples": 0, "false_marks_first": [], "over_marks": 0}
    holes = []  # [first missing index, how many, time of the point before it], every session's
    for session, session_docs in _sessions(docs, address, session_id):
        report["sessions"] += 1
        previous = previous_time = None
        session_holes = []
        recorded = set()  # the session's indexes so far, to tell a twin from a sample out of order
        for d in session_docs:
            for position, p in enumerate(d.get("data", [])):
                g = p.get("gyroscope")
                if not g:
                    continue
                time = g.get("timestamp")
                raw = tuple(round(g[k] * GYRO_SCALE) for k in ("x", "y", "z"))
                low = raw[0] & 0xFFFF
                late = None
                if resets and previous is not None and low < 2000 and low < (previous & 0xFFFF):
                    recorded.clear()  # the board's numbering starts again (below): a new run
                behind = previous is not None and (low - (previous & 0xFFFF)) & 0xFFFF >= 0x8000
                if behind and previous - ((previous - low) & 0xFFFF) in recorded:
                    report["duplicates"] += 1  # a twin of an earlier point of the session
                    continue
                if behind and p.get("backfilled"):
                    late = _fill_hole(session_holes, previous - ((previous - low) & 0xFFFF))
                if late is None:
                    if time is not None and previous_time is not None and time < previous_time:
                        report["time_backwards"] += 1
                    if time is not None:
                        previous_time = time if previous_time is None else max(previous_time, time)
                if late is not None:
                    # A correction chunk: the flash log's samples of a gap still open when the
                    # session stopped (or the gateway restarted) come sealed into the ended
                    # session after its last chunk, marked backfilled (docs/data-model.md,
                    # "revised"). In place, they fill the hole they belong to.
                    full = late
                    report["filled_late"] += 1
                elif previous is None:
                    full = low
                else:
                    delta = (low - (previous & 0xFFFF)) & 0xFFFF
                    if delta == 0:
                        report["duplicates"] += 1
                        continue
                    if resets and low < 2000 and low < (previous & 0xFFFF):
                        full = low
                        delta = 1
                    elif delta >= 0x8000:
                        report["reordered"] += 1
                        if report["first_out_of_order"] is None:
                            report["first_out_of_order"] = {"session": session, "seq": d.get("seq"),
                                                            "position": position, "previous_index": previous,
                                                            "index_low16": low}
                        continue
                    else:
                        full = previous + delta
                    if delta == 1 and p.get("missed_before"):
                        report["false_marks"] += 1
                        report["false_marked_samples"] += p["missed_before"]
                        if len(report["false_marks_first"]) < 5:
                            report["false_marks_first"].append((previous + 1, time, p["missed_before"], p.get("gap_ms")))
                    elif delta > 1 and p.get("missed_before", 0) > delta - 1:
                        report["over_marks"] += 1
                    if delta > 1:
                        # When the stream broke: the time of the last point before the gap.
                        session_holes.append([previous + 1, delta - 1, previous_time])
                if late is None:
                    previous = full
                recorded.add(full)
                report["count"] += 1
                marked = bool(p.get("backfilled"))
                report["backfilled"] += marked
                if sent is not None:
                    was_sent = _in_runs(full, sent)
                    if marked and was_sent:
                        report["sent_backfilled"] += 1
                    elif not marked and not was_sent:
                        report["unsent_unmarked"] += 1
                        if len(report["unsent_unmarked_first"]) < 5:
                            report["unsent_unmarked_first"].append(full)
                if raw != simulator_signal("gyro", seed, full):
                    report["mismatched"] += 1
        holes += session_holes
    report["gaps"] = [(first, count) for first, count, _ in holes]
    report["gap_after"] = [after for _, _, after in holes]
    return report


def false_marks_message(report, address):
    """What a check of gap marks says: the board, how many marks claim samples where none is
    missing, and the first few (index, time, mark); empty when there is none."""
    if not report["false_marks"]:
        return ""
    first = ", ".join(f"index {index} at {time} ms marked {mark} missing ({gap} ms)"
                      for index, time, mark, gap in report["false_marks_first"])
    return (f"board {address}: {report['false_marks']} gap marks where no sample is missing "
            f"({report['false_marked_samples']} samples claimed), first: {first}")


def main(argv):
    if len(argv) < 4:
        print("usage: document_check.py OUTBOX ADDRESS SEED [--resets] [--false-marks]", file=sys.stderr)
        return 2
    report = check_documents(read_documents(argv[1]), argv[2], int(argv[3]), resets="--resets" in argv[4:])
    if "--false-marks" in argv[4:]:
        # The VM groups' check of gap marks, offline: fails (1) on any mark where no index is missing.
        message = false_marks_message(report, argv[2])
        print(message or f"board {argv[2]}: no gap mark where no sample is missing ({report['count']} samples)")
        return 1 if message else 0
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
