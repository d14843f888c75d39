#!/usr/bin/python3
"""A minimal central through bluetoothd's D-Bus API (python3-dbus, no mwgated, no bleak) that
streams several BMI160 boards at once inside the VM: whether the real stack on btvirt carries
them by itself (docs/bluez-vm.md, session group). Scans on hci0, connects the boards argv[2:]
one after another, waits until their MetaWear characteristics are exported, takes each
notify socket with AcquireNotify, starts each gyro at 100 Hz with the writes mwgated makes
(metawear-protocol.md §4), reads for argv[1] seconds and prints one JSON line per board:
notifications, duplicates, numbers going backwards, gaps (first missing sample number, how
many; the checkable signal carries the number in x), notifications per second (a stall shows
as zeros) and the writes that failed."""
import json
import os
import select
import sys
import threading
import time

import dbus

COMMAND = "326a9001-85cb-9195-d9dd-464cfbbae75a"
NOTIFY = "326a9006-85cb-9195-d9dd-464cfbbae75a"
START_GYRO = ([0x13, 0x03, 0x28, 0x00], [0x13, 0x05, 0x01], [0x13, 0x02, 0x01, 0x00], [0x13, 0x01, 0x01])
STOP_GYRO = [0x13, 0x01, 0x00]

bus = dbus.SystemBus()
manager = dbus.Interface(bus.get_object("org.bluez", "/"), "org.freedesktop.DBus.ObjectManager")


def log(message):
    print(f"{time.time():.3f} dbus_boards: {message}", file=sys.stderr, flush=True)


def find(predicate):
    for path, interfaces in manager.GetManagedObjects().items():
        if predicate(str(path), interfaces):
            return str(path)
    return None


def wait(what, get, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            value = get()
        except dbus.DBusException as error:
            log(f"{what}: {error}")
            value = None
        if value:
            return value
        time.sleep(0.2)
    raise RuntimeError(f"{what}: not within {timeout} s")


def characteristic(device, uuid):
    return find(lambda p, i: p.startswith(device + "/") and "org.bluez.GattCharacteristic1" in i
                and str(i["org.bluez.GattCharacteristic1"]["UUID"]) == uuid)


class Board:
    def __init__(self, address):
        self.address = address.upper()
        self.count = self.duplicates = self.backwards = self.write_failures = 0
        self.last = None
        self.gaps = []
        self.per_second = {}
        self.buffer = b""

    def connect(self):
        adapter = dbus.Interface(bus.get_object("org.bluez", "/org/bluez/hci0"), "org.bluez.Adapter1")
        adapter.SetDiscoveryFilter({"Transport": "le", "DuplicateData": False})
        adapter.StartDiscovery()
        try:
            self.device = wait(f"{self.address} seen on hci0", lambda: find(
                lambda p, i: p.startswith("/org/bluez/hci0/") and "org.bluez.Device1" in i
                and str(i["org.bluez.Device1"]["Address"]).upper() == self.address), 60)
        finally:
            adapter.StopDiscovery()
        device = dbus.Interface(bus.get_object("org.bluez", self.device), "org.bluez.Device1")
        for attempt in range(5):
            try:
                device.Connect(timeout=30)
                break
            except dbus.DBusException as error:
                log(f"{self.address} Connect: {error}")
                if bool(dbus.Interface(bus.get_object("org.bluez", self.device), "org.freedesktop.DBus.Properties")
                        .Get("org.bluez.Device1", "Connected")):
                    break  # the 5.66 connect race: the link is up anyway
                try:
                    device.Disconnect(timeout=10)  # a connect stuck "in progress": start afresh
                except dbus.DBusException:
                    pass
                time.sleep(1)
        self.command = wait(f"{self.address} command characteristic", lambda: characteristic(self.device, COMMAND), 60)
        notify = wait(f"{self.address} notify characteristic", lambda: characteristic(self.device, NOTIFY), 60)
        self.command_chrc = dbus.Interface(bus.get_object("org.bluez", self.command), "org.bluez.GattCharacteristic1")
        chrc = dbus.Interface(bus.get_object("org.bluez", notify), "org.bluez.GattCharacteristic1")
        fd, mtu = chrc.AcquireNotify({})
        self.fd = fd.take()
        os.set_blocking(self.fd, False)
        log(f"{self.address} connected, notify socket acquired (MTU {mtu})")

    def write(self, command):
        try:
            self.command_chrc.WriteValue(dbus.Array([dbus.Byte(b) for b in command]), {"type": "command"}, timeout=10)
        except dbus.DBusException as error:
            self.write_failures += 1
            log(f"{self.address} write {bytes(command).hex()}: {error}")

    def read(self):
        while True:
            try:
                data = os.read(self.fd, 600)
            except BlockingIOError:
                return
            if not data:
                return
            self.received(data)

    def received(self, data):
        if len(data) != 8 or data[0] != 0x13 or data[1] != 0x05:
            return
        second = int(time.time())
        self.per_second[second] = self.per_second.get(second, 0) + 1
        number = data[2] | data[3] << 8
        self.count += 1
        if self.last is not None:
            delta = (number - self.last) & 0xFFFF
            if delta == 0:
                self.duplicates += 1
                return
            if delta >= 0x8000:
                self.backwards += 1
                return
            if delta > 1:
                self.gaps.append((self.last + 1, delta - 1))
        self.last = number

    def report(self, start, end):
        return {"address": self.address, "notifications": self.count, "duplicates": self.duplicates,
                "backwards": self.backwards, "gaps": self.gaps[:20], "gap_count": len(self.gaps),
                "write_failures": self.write_failures,
                "per_second": [self.per_second.get(s, 0) for s in range(int(start), int(end) + 1)]}


def main():
    seconds, addresses = float(sys.argv[1]), sys.argv[2:]
    boards = []
    for address in addresses:
        board = Board(address)
        board.connect()
        boards.append(board)
    start = time.time()
    for board in boards:
        for command in START_GYRO:
            board.write(command)
    log(f"streaming from {len(boards)} boards")
    next_check = start + 5
    while time.time() < start + seconds:
        ready, _, _ = select.select([b.fd for b in boards], [], [], 0.5)
        for board in boards:
            if board.fd in ready:
                board.read()
        if time.time() >= next_check:
            # A command while streaming, as mwgated's battery reads and restarts would be: is
            # the link still answering writes? From a thread of its own, so that a slow answer
            # does not stop this loop reading the notify sockets.
            next_check += 5
            for board in boards:
                threading.Thread(target=board.write, args=([0x11, 0x81],), daemon=True).start()
    end = time.time()
    for board in boards:
        board.write(STOP_GYRO)
    for board in boards:
        print(json.dumps(board.report(start, end)), flush=True)


main()
