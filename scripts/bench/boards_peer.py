"""bleak peer for the boards benchmark: connects to a simulated MetaWear board through
BlueZ's D-Bus API (mwsim on the bus in DBUS_SYSTEM_BUS_ADDRESS), starts the same gyro stream
our BoardSession starts, decodes every notification the same way (x/y/z int16 -> deg/s) and
reports its own CPU and dbus-daemon's over the measuring window as key=value lines.

usage: boards_peer.py ADDRESS SECONDS RATE_CODE DBUS_PID SIM_PID
"""
import asyncio
import os
import resource
import struct
import sys
import time

from bleak import BleakClient, BleakScanner

COMMAND = "326a9001-85cb-9195-d9dd-464cfbbae75a"
NOTIFY = "326a9006-85cb-9195-d9dd-464cfbbae75a"


def proc_cpu(pid):
    """Seconds on a CPU of another process, summed over its threads' schedstat (ns), as
    mwbench measures it (/proc/PID/stat's 10 ms ticks are too coarse); stat as fallback."""
    try:
        total = 0
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except OSError:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
        fields = text[text.rindex(")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def main():
    address, seconds, rate_code, dbus_pid, sim_pid = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    counts = {"samples": 0, "notifications": 0}
    packed = struct.Struct("<9h")

    def on_notify(_characteristic, data: bytearray):
        # Packed BMI160 gyro: 13 07 + three x/y/z int16 samples, 16.4 LSB per deg/s at 2000 deg/s.
        if len(data) == 20 and data[0] == 0x13 and data[1] == 0x07:
            values = packed.unpack_from(data, 2)
            _ = [v / 16.4 for v in values]
            counts["samples"] += 3
            counts["notifications"] += 1

    device = await BleakScanner.find_device_by_address(address, timeout=20)
    if device is None:
        sys.exit(f"boards_peer: {address} not found")
    async with BleakClient(device) as client:
        await client.start_notify(NOTIFY, on_notify)
        for command in (
            bytes.fromhex("1109060006000000 5802".replace(" ", "")),  # fastest connection interval
            bytes([0x13, 0x03, 0x20 | rate_code, 0x00]),             # gyro config, +-2000 deg/s
            bytes([0x13, 0x07, 0x01]),                              # packed notify on
            bytes([0x13, 0x02, 0x01, 0x00]),                        # data interrupt on
            bytes([0x13, 0x01, 0x01]),                              # power on
        ):
            await client.write_gatt_char(COMMAND, command, response=False)
        deadline = time.monotonic() + 10
        while counts["samples"] == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if counts["samples"] == 0:
            sys.exit("boards_peer: no samples")
        await asyncio.sleep(1)
        s0, c0, d0, m0, w0 = counts["samples"], own_cpu(), proc_cpu(dbus_pid), proc_cpu(sim_pid), time.monotonic()
        n0 = counts["notifications"]
        await asyncio.sleep(seconds)
        s1, c1, d1, m1, w1 = counts["samples"], own_cpu(), proc_cpu(dbus_pid), proc_cpu(sim_pid), time.monotonic()
        n1 = counts["notifications"]
        for command in ([0x13, 0x01, 0x00], [0x13, 0x02, 0x00, 0x01], [0x13, 0x07, 0x00]):
            await client.write_gatt_char(COMMAND, bytes(command), response=False)
        await client.stop_notify(NOTIFY)
    samples = s1 - s0
    per = lambda cpu: cpu * 1000 / samples * 1000
    print(f"bleak_samples={samples}")
    print(f"bleak_notifications={n1 - n0}")
    print(f"bleak_seconds={w1 - w0:.2f}")
    print(f"bleak_samples_per_s={samples / (w1 - w0):.0f}")
    print(f"bleak_cpu_s={c1 - c0:.4f}")
    print(f"bleak_ms_per_1000={per(c1 - c0):.3f}")
    print(f"bleak_dbus_cpu_s={d1 - d0:.4f}")
    print(f"bleak_dbus_ms_per_1000={per(d1 - d0):.3f}")
    print(f"bleak_sim_ms_per_1000={per(m1 - m0):.3f}")


asyncio.run(main())
