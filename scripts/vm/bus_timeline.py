#!/usr/bin/env python3
"""Where a reconnect's time goes on the gateway's bus: bluetoothd's signals and mwgated's calls
that the bench group records with BENCH_BUS_TRACE=1 (results/bench-bus.log, dbus-monitor's
output), one Markdown row per Device1.Connect of the gateway (hci0).

    scripts/vm/bus_timeline.py RESULTS/bench-bus.log

Per connect, seconds from its answer: bluetoothd's ServicesResolved=true (its GATT client ready),
mwgated's AcquireNotify call (ours: it needs the kept GATT objects and the link's own bus
connection) and bluetoothd's answer to it (the socket; 5.66 answers only once ready). When the
call comes before ServicesResolved, bluetoothd holds it until then and nothing of ours is left
between the link and the first sample; when it comes after, the difference is ours.

    scripts/vm/bus_timeline.py RESULTS/bench-bus.log RESULTS/metrics.json

With the bench's metrics (its per-drop rows carry the VM's wall-clock times, as the trace does),
three more columns on the same base: the link up and the board's CCCD written as the board's
side saw them, and the status's first sample on the new link (the arrival time mwgated stamps
on it, from the kernel's socket timestamp; the bench polls the status every 0.1 s and takes the
newest sample, so this is the first sample's arrival or up to one poll later). What lies between
the socket (`AcquireNotify` answered) and that sample is the board's next notification crossing
bluetoothd into the socket, and nothing of mwgated's but the read itself."""
import json
import re
import sys

HEADER = re.compile(r"^(signal|method call|method return|error) time=([\d.]+) sender=(\S+) -> destination=(\(null destination\)|\S+)"
                    r" serial=(\d+)(?: reply_serial=(\d+))?(?: path=([^;]+); interface=([^;]+); member=(\S+))?")
GATEWAY = "/org/bluez/hci0/"


def messages(path):
    """(kind, time, sender, destination, serial, reply_serial, path, interface, member, body lines)."""
    current = None
    for line in open(path, errors="replace"):
        match = HEADER.match(line)
        if match:
            if current:
                yield current
            kind, time, sender, destination, serial, reply, obj, interface, member = match.groups()
            current = [kind, float(time), sender, destination, serial, reply, obj or "", interface or "", member or "", []]
        elif current:
            current[9].append(line.strip())
    if current:
        yield current


def changed(body, name):
    """The boolean value of property `name` in a PropertiesChanged body, or None."""
    for index, line in enumerate(body):
        if line == f'string "{name}"' and index + 1 < len(body):
            return body[index + 1].endswith("true")
    return None


def main():
    calls = {}  # (sender, serial) -> (member, time)
    rows = []
    resolved_at = None
    for kind, time, sender, destination, serial, reply, obj, interface, member, body in messages(sys.argv[1]):
        if kind == "method call" and obj.startswith(GATEWAY) and member in ("Connect", "AcquireNotify"):
            calls[(sender, serial)] = (member, time)
            if member == "AcquireNotify" and rows and rows[-1]["acquire called"] is None:
                rows[-1]["acquire called"] = time
        elif kind in ("method return", "error") and (destination, reply) in calls:
            member, called = calls.pop((destination, reply))
            if member == "Connect":
                rows.append({"called": called, "answered": time, "error": kind == "error", "resolved": None,
                             "acquire called": None, "acquire answered": None})
            elif member == "AcquireNotify" and rows and rows[-1]["acquire answered"] is None:
                rows[-1]["acquire answered"] = time
        elif kind == "signal" and member == "PropertiesChanged" and obj.startswith(GATEWAY) and obj.count("/") == 4:
            if changed(body, "ServicesResolved") and rows and rows[-1]["resolved"] is None:
                rows[-1]["resolved"] = time
    drops = per_drop(sys.argv[2]) if len(sys.argv) > 2 else None
    cell = lambda value: "?" if value is None else f"{value:.2f}"
    header = ("| connect | Connect called -> answered | ServicesResolved | AcquireNotify called (ours) | AcquireNotify answered "
              "| ours after ServicesResolved |")
    rule = "|---:|---:|---:|---:|---:|---:|"
    if drops is not None:
        header += " link up (board's side) | CCCD written (board's side) | status's first sample | socket -> first sample |"
        rule += "---:|---:|---:|---:|"
    print(header)
    print(rule)
    for number, row in enumerate(rows, 1):
        base = row["answered"]
        rel = {k: (row[k] - base if row[k] is not None else None) for k in ("resolved", "acquire called", "acquire answered")}
        ours = None
        if rel["resolved"] is not None and rel["acquire called"] is not None:
            ours = max(0.0, rel["acquire called"] - rel["resolved"])
        line = (f"| {number} | {row['answered'] - row['called']:.2f}{' (error)' if row['error'] else ''} | {cell(rel['resolved'])} "
                f"| {cell(rel['acquire called'])} | {cell(rel['acquire answered'])} | {cell(ours)} |")
        if drops is not None:
            drop = nearest_drop(drops, base)
            at = lambda key: drop[key] - base if drop and drop.get(key) else None
            socket = at("first sample at") - rel["acquire answered"] \
                if at("first sample at") is not None and rel["acquire answered"] is not None else None
            line += f" {cell(at('link up at'))} | {cell(at('notifications on at'))} | {cell(at('first sample at'))} | {cell(socket)} |"
        print(line)


def per_drop(path):
    """The bench's per-drop rows (metrics.json) that carry wall-clock times."""
    rows = [m["value"] for m in map(json.loads, open(path)) if m["name"] == "per drop"]
    return [r for r in (rows[-1] if rows else []) if r.get("link up at")]


def nearest_drop(drops, answered):
    """The drop whose link up (board's side) is nearest a Connect's answer, within 2 s: the link
    comes up before bluetoothd answers (0.00-0.08 s in the runs measured), one link a drop."""
    drop = min(drops, key=lambda d: abs(d["link up at"] - answered), default=None)
    return drop if drop and abs(drop["link up at"] - answered) < 2 else None

if __name__ == "__main__":
    main()
