"""bleak peer for the backfill benchmark: the download MbientLab's SDK makes
(metawear-logging.md §8.1), through bleak on the same simulated MetaMotion R and dbus-daemon.
It logs gyro at 800 Hz (±2000 °/s) for SECONDS s without streaming, stops the sensor and the
logger, asks mwsim to read the log out at FAST notifications/s (as backfill_daemon.py does for
mwgated's stop), and downloads it as `mbl_mw_logging_download(board, 20, handler)` does:
`0B 08 01`, `0B 0D 01`, `0B 07 01`, `0B 85`, then `0B 06 <n> <n/20>`, `0B 0E` after every `0B 0D`,
until `0B 08 00 00 00 00`; every entry is decoded and paired into samples as the SDK does (one
FIFO per logger id, a sample when both have a word). Reports its own CPU and dbus-daemon's
over the download as key=value lines.

usage: backfill_peer.py ADDRESS SECONDS FAST DBUS_PID BUS_ADDRESS
"""
import asyncio
import collections
import os
import resource
import struct
import sys
import time

from bleak import BleakClient, BleakScanner

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mwgated_daemon import schedstat_ns, simulator  # noqa: E402

COMMAND = "326a9001-85cb-9195-d9dd-464cfbbae75a"
NOTIFY = "326a9006-85cb-9195-d9dd-464cfbbae75a"

SETUP = ["13 03 2b 00",        # gyro 800 Hz (ODR 11, normal filter), ±2000 °/s
         "0b 02 13 05 ff 60",  # logger: x, y (4 bytes from offset 0)
         "0b 02 13 05 ff 24",  # logger: z (2 bytes from offset 4)
         "0b 0b 00", "0b 01 01",  # logging on, no overwrite
         "13 02 01 00", "13 01 01"]  # gyro data interrupt, power on
STOP = ["13 01 00", "13 02 00 01", "0b 01 00"]
DOWNLOAD = ["0b 08 01", "0b 0d 01", "0b 07 01", "0b 85"]
SCALE = 16.4  # LSB per °/s at ±2000 °/s
END = bytes([0x0B, 0x08, 0, 0, 0, 0])


def own_cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def main():
    address, seconds, fast, dbus_pid, bus_address = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    queue = asyncio.Queue()
    ids = []
    words = collections.defaultdict(collections.deque)
    counts = {"entries": 0, "samples": 0}

    def on_notify(_characteristic, data: bytearray):
        if len(data) < 2 or data[0] != 0x0B:
            return
        if data[1] == 0x07:
            for offset in (2, 11) if len(data) == 20 else (2,):
                logger_id = data[offset] & 0x1F
                words[logger_id].append(bytes(data[offset + 5:offset + 9]))
                counts["entries"] += 1
                if len(ids) == 2 and all(words[i] for i in ids):
                    x, y, z = struct.unpack("<3h", (words[ids[0]].popleft() + words[ids[1]].popleft())[:6])
                    _ = (x / SCALE, y / SCALE, z / SCALE)
                    counts["samples"] += 1
        elif data[1] != 0x08 or bytes(data) == END:
            queue.put_nowait(bytes(data))

    async def write(client, line):
        await client.write_gatt_char(COMMAND, bytes.fromhex(line), response=False)

    async def reply(register):
        while True:
            data = await asyncio.wait_for(queue.get(), 10)
            if data[1] == register:
                return data

    device = await BleakScanner.find_device_by_address(address, timeout=20)
    if device is None:
        sys.exit(f"backfill_peer: {address} not found")
    async with BleakClient(device) as client:
        await client.start_notify(NOTIFY, on_notify)
        for line in SETUP:
            await write(client, line)
            if line.startswith("0b 02"):
                ids.append((await reply(0x02))[2])
        await asyncio.sleep(seconds)
        for line in STOP:
            await write(client, line)
        simulator(bus_address, "SetReadoutRate", "uu", 0, fast)
        c0, d0, w0 = own_cpu(), schedstat_ns(dbus_pid) / 1e9, time.monotonic()
        for line in DOWNLOAD:
            await write(client, line)
        n = struct.unpack("<I", (await reply(0x85))[2:6])[0]
        await write(client, (bytes([0x0B, 0x06]) + struct.pack("<II", n, n // 20)).hex())
        while True:
            try:
                data = await asyncio.wait_for(queue.get(), 30)
            except asyncio.TimeoutError:
                sys.exit(f"backfill_peer: the readout stalled after {counts['entries']} of {n} entries")
            if data == END:
                break
            if data[1] == 0x0D:
                await write(client, "0b 0e")
        c1, d1, w1 = own_cpu(), schedstat_ns(dbus_pid) / 1e9, time.monotonic()
        await write(client, "0b 09 ff ff ff ff")
        await client.stop_notify(NOTIFY)
    samples, elapsed = counts["samples"], w1 - w0
    print(f"bleak_entries={counts['entries']}")
    print(f"bleak_entries_reported={n}")
    print(f"bleak_samples={samples}")
    print(f"bleak_download_s={elapsed:.2f}")
    print(f"bleak_entries_per_s={counts['entries'] / elapsed:.0f}")
    print(f"bleak_samples_per_s={samples / elapsed:.0f}")
    if samples:
        print(f"bleak_cpu_ms_per_1000={(c1 - c0) * 1e6 / samples:.1f}")
        print(f"bleak_dbus_ms_per_1000={(d1 - d0) * 1e6 / samples:.1f}")


asyncio.run(main())
