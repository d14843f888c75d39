#!/usr/bin/python3
"""bleak (PyPI, an independent BLE central on BlueZ) receiving a board's stream inside the VM,
for the benchmark beside mwgated: connects to argv[1], starts the gyro at 100 Hz with the same
writes mwgated makes (metawear-protocol.md §4), counts notifications for argv[2] seconds with
StartNotify or AcquireNotify (argv[3]: start|acquire) and prints one JSON line with its own CPU
seconds (user + system) per 1,000 notifications."""
import asyncio
import json
import os
import sys
import time

sys.path.insert(0, "/opt/bleak")
from bleak import BleakClient  # noqa: E402

COMMAND = "326a9001-85cb-9195-d9dd-464cfbbae75a"
NOTIFY = "326a9006-85cb-9195-d9dd-464cfbbae75a"


async def main():
    address, seconds, path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    count = 0

    def received(_, data):
        nonlocal count
        count += 1

    async with BleakClient(address, timeout=30) as client:
        await client.start_notify(NOTIFY, received, bluez={"use_start_notify": path == "start"})
        for command in ([0x13, 0x03, 0x28, 0x00], [0x13, 0x05, 0x01], [0x13, 0x02, 0x01, 0x00], [0x13, 0x01, 0x01]):
            await client.write_gatt_char(COMMAND, bytes(command), response=False)
        await asyncio.sleep(1)
        count = 0
        t0 = os.times()
        await asyncio.sleep(seconds)
        t1 = os.times()
        received_in_window = count
        await client.write_gatt_char(COMMAND, bytes([0x13, 0x01, 0x00]), response=False)
        await client.stop_notify(NOTIFY)
    cpu = (t1.user - t0.user) + (t1.system - t0.system)
    print(json.dumps({"path": path, "notifications": received_in_window, "cpu_seconds": cpu,
                      "cpu_ms_per_1000": 1e6 * cpu / max(1, received_in_window)}))


asyncio.run(main())
