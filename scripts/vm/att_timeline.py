#!/usr/bin/env python3
"""Where a reconnect's time goes on the air: the ATT requests one controller sent on each LE link,
read from the HCI trace the VM records with MWGATE_VM_BTMON=1 (results/hci.btsnoop, btmon -w's
monitor format; 5.66's own `btmon -r` crashes on these traces, real-bluez-vm.md).

    scripts/vm/att_timeline.py RESULTS/hci.btsnoop [INDEX]      # INDEX: the controller, 0 = hci0
    scripts/vm/att_timeline.py --table RESULTS/hci.btsnoop      # one Markdown row per link (make bench)

Per link: each request the controller sent and its answer, in seconds from the LE connection
complete, then a summary line: how many requests came before bluetoothd's GATT client was ready
(the answer to its last Database Hash read, "Read By Type" from 0x0010 on a MetaWear model), when
the MetaWear notify CCCD (handle 0x001a in mwsim's layout) was written, when the first
notification came, and how the time before ready splits into the peer answering (round trips) and
this side sending its next request (gaps)."""
import struct
import sys

NAMES = {0x01: "Error Rsp", 0x02: "MTU Req", 0x03: "MTU Rsp", 0x08: "Read By Type Req", 0x09: "Read By Type Rsp",
         0x0a: "Read Req", 0x0b: "Read Rsp", 0x10: "Read By Group Type Req", 0x11: "Read By Group Type Rsp",
         0x12: "Write Req", 0x13: "Write Rsp", 0x1b: "Notification", 0x23: "Multiple Notification"}
NOTIFY_CCCD = 0x001a
# btsnoop monitor opcodes (the low 16 bits of a record's flags; the high 16 are the controller).
EVENT, ACL_TX, ACL_RX = 3, 4, 5


def records(path):
    data = open(path, "rb").read()
    position = 16  # "btsnoop\0", version, datalink
    while position + 24 <= len(data):
        _, length, flags, _, microseconds = struct.unpack(">IIIIq", data[position:position + 24])
        yield flags >> 16, flags & 0xFFFF, microseconds / 1e6, data[position + 24:position + 24 + length]
        position += 24 + length


def links(path, index):
    """Lists of (seconds since link up, direction, ATT opcode, handle or range) per link."""
    current, up = None, None
    for controller, opcode, time, packet in records(path):
        if controller != index:
            continue
        if opcode == EVENT and len(packet) >= 4:
            if packet[0] == 0x3e and packet[2] in (0x01, 0x0a) and packet[3] == 0:  # LE (enhanced) connection complete
                current, up = [], time
            elif packet[0] == 0x05 and current is not None:  # disconnection complete
                yield current
                current = None
        elif opcode in (ACL_TX, ACL_RX) and current is not None and len(packet) >= 9 and packet[6:8] == b"\x04\x00":
            att = packet[8]
            detail = ""
            if att in (0x0a, 0x12, 0x1b, 0x23) and len(packet) >= 11:
                detail = f"0x{int.from_bytes(packet[9:11], 'little'):04x}"
            elif att in (0x08, 0x10) and len(packet) >= 13:
                detail = f"0x{int.from_bytes(packet[9:11], 'little'):04x}-0x{int.from_bytes(packet[11:13], 'little'):04x}"
            current.append((time - up, "TX" if opcode == ACL_TX else "RX", att, detail))
    if current is not None:
        yield current


def summary(pdus):
    """This side's requests and their answers (the peer's own requests and our answers are left out)."""
    ours = [p for p in pdus if (p[1] == "TX" and NAMES.get(p[2], "").endswith("Req"))
            or (p[1] == "RX" and NAMES.get(p[2], "").endswith("Rsp"))]
    hash_end = next((p[0] for p in ours if p[1] == "TX" and p[2] == 0x08 and p[3].startswith("0x0010")), None)
    ready = next((p[0] for p in ours if hash_end is not None and p[0] > hash_end and p[1] == "RX"), None)
    cccd = next((p[0] for p in ours if p[1] == "TX" and p[2] == 0x12 and p[3] == f"0x{NOTIFY_CCCD:04x}"), None)
    first = next((p[0] for p in pdus if p[1] == "RX" and p[2] in (0x1b, 0x23) and p[3] != "0x0029"), None)
    round_trips = gaps = 0.0
    sent = answered = None
    requests = 0
    for time, direction, _, _ in ours:
        if ready is not None and time > ready:
            break
        if direction == "TX":
            requests += 1
            if answered is not None:
                gaps += time - answered
            sent = time
        elif sent is not None:
            round_trips += time - sent
            answered = time
    return ours, requests, ready, cccd, first, round_trips, gaps


def slowest_answer(ours):
    """The request the peer took longest to answer: (seconds, request name and handle)."""
    slowest, sent = None, None
    for time, direction, att, detail in ours:
        if direction == "TX":
            sent = (time, f"{NAMES.get(att, hex(att))} {detail}".strip())
        elif sent is not None:
            if slowest is None or time - sent[0] > slowest[0]:
                slowest = (time - sent[0], sent[1])
            sent = None
    return slowest


def table(path, index):
    """One Markdown row per link, times in seconds from the LE connection complete."""
    cell = lambda value: "?" if value is None else f"{value:.2f}"
    print("| link | requests before ready | notify CCCD written | ready | first notification | CCCD -> first notification "
          "| before ready: the peer answering / this side's gaps | the peer's slowest answer |")
    print("|---:|---:|---:|---:|---:|---:|---|---|")
    for number, pdus in enumerate(links(path, index), 1):
        ours, requests, ready, cccd, first, round_trips, gaps = summary(pdus)
        slowest = slowest_answer(ours)
        print(f"| {number} | {requests} | {cell(cccd)} | {cell(ready)} | {cell(first)} "
              f"| {cell(first - cccd if first is not None and cccd is not None else None)} "
              f"| {round_trips:.2f} / {gaps:.2f} | {'?' if slowest is None else f'{slowest[0]:.2f} ({slowest[1]})'} |")


def main():
    if sys.argv[1] == "--table":
        return table(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0)
    path = sys.argv[1]
    index = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    text = lambda value: "-" if value is None else f"{value:.3f} s"
    for number, pdus in enumerate(links(path, index), 1):
        ours, requests, ready, cccd, first, round_trips, gaps = summary(pdus)
        print(f"link {number}")
        for time, direction, att, detail in ours:
            print(f"  {time:8.3f} {direction} {NAMES.get(att, hex(att))} {detail}")
        print(f"  requests before ready {requests}; notify CCCD written {text(cccd)}, ready {text(ready)}, "
              f"first notification {text(first)}; before ready: round trips {round_trips:.3f} s, gaps {gaps:.3f} s")


if __name__ == "__main__":
    main()
