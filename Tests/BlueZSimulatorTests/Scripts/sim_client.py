#!/usr/bin/python3
"""Independent BlueZ client for the mwsim tests (python3-dbus, not our Swift code).

Usage: sim_client.py stream GYRO_START_HEX... 
Discovers the first MetaWear board, connects, waits for ServicesResolved, reads the DIS
strings, subscribes with StartNotify, writes the given command bytes (type=command),
collects notifications for a while, then switches to AcquireNotify and reads datagrams.
Prints one JSON object on stdout.
"""
import json
import os
import select
import socket
import sys
import time

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

MW_SERVICE = "326a9000-85cb-9195-d9dd-464cfbbae75a"
MW_COMMAND = "326a9001-85cb-9195-d9dd-464cfbbae75a"
MW_NOTIFY = "326a9006-85cb-9195-d9dd-464cfbbae75a"
DIS = {"2a24": "model", "2a26": "firmware", "2a27": "hardware", "2a29": "manufacturer", "2a25": "serial"}

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SystemBus()
loop = GLib.MainLoop()


def run_loop_until(predicate, timeout):
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        GLib.timeout_add(20, loop.quit)
        loop.run()
    return predicate()


def managed():
    om = dbus.Interface(bus.get_object("org.bluez", "/"), "org.freedesktop.DBus.ObjectManager")
    return om.GetManagedObjects()


def main():
    commands = [bytes.fromhex(h) for h in sys.argv[2:]]
    result = {}
    added = []
    bus.add_signal_receiver(lambda path, ifaces: added.append((str(path), ifaces)),
                            dbus_interface="org.freedesktop.DBus.ObjectManager", signal_name="InterfacesAdded",
                            bus_name="org.bluez")
    adapter = dbus.Interface(bus.get_object("org.bluez", "/org/bluez/hci0"), "org.bluez.Adapter1")
    adapter.SetDiscoveryFilter({"Transport": "le", "UUIDs": dbus.Array([MW_SERVICE], signature="s"),
                                "RSSI": dbus.Int16(-100)})
    adapter.StartDiscovery()
    try:
        adapter.StartDiscovery()
    except dbus.DBusException as error:
        result["second_start"] = [error.get_dbus_name(), error.get_dbus_message()]
    run_loop_until(lambda: any("org.bluez.Device1" in i for _, i in added), 10)
    path, ifaces = next((p, i) for p, i in added if "org.bluez.Device1" in i)
    props = ifaces["org.bluez.Device1"]
    result["device"] = {"path": path, "Address": str(props["Address"]), "AddressType": str(props["AddressType"]),
                        "Name": str(props["Name"]), "RSSI_signature": props["RSSI"].__class__.__name__,
                        "ManufacturerData": {str(int(k)): bytes(v).hex() for k, v in props["ManufacturerData"].items()},
                        "UUIDs": [str(u) for u in props["UUIDs"]]}
    adapter.StopDiscovery()

    changes = []

    def on_changed(interface, changed, invalidated, path=None):
        changes.append((time.monotonic(), str(path), str(interface), {str(k): v for k, v in changed.items()}))

    bus.add_signal_receiver(on_changed, dbus_interface="org.freedesktop.DBus.Properties",
                            signal_name="PropertiesChanged", bus_name="org.bluez", path_keyword="path")
    device = dbus.Interface(bus.get_object("org.bluez", path), "org.bluez.Device1")
    device.Connect(timeout=30)
    resolved = run_loop_until(lambda: any(c[1] == path and c[3].get("ServicesResolved") for c in changes), 10)
    result["services_resolved"] = bool(resolved)
    result["device_events"] = [sorted(c[3].keys()) for c in changes if c[1] == path]
    objects = managed()
    chars = {}
    for p, i in objects.items():
        if "org.bluez.GattCharacteristic1" in i and str(p).startswith(path + "/"):
            chars[str(i["org.bluez.GattCharacteristic1"]["UUID"])] = (str(p), i["org.bluez.GattCharacteristic1"])
    result["characteristics"] = {u: {"path": p, "flags": [str(f) for f in c["Flags"]]} for u, (p, c) in chars.items()}
    dis = {}
    for uuid, (p, _) in chars.items():
        short = uuid[4:8]
        if short in DIS:
            ch = dbus.Interface(bus.get_object("org.bluez", p), "org.bluez.GattCharacteristic1")
            dis[DIS[short]] = bytes(ch.ReadValue({})).decode()
    result["dis"] = dis

    notify_path = chars[MW_NOTIFY][0]
    command = dbus.Interface(bus.get_object("org.bluez", chars[MW_COMMAND][0]), "org.bluez.GattCharacteristic1")
    notify = dbus.Interface(bus.get_object("org.bluez", notify_path), "org.bluez.GattCharacteristic1")
    notify.StartNotify()
    for c in commands:
        command.WriteValue(dbus.Array(c, signature="y"), {"type": "command"})
    start = time.monotonic()
    run_loop_until(lambda: time.monotonic() - start > 1.5, 5)
    values = [(t, bytes(c[3]["Value"]).hex()) for c in changes if c[1] == notify_path and "Value" in c[3]
              for t in [c[0]]]
    result["notify_values"] = [v for _, v in values]
    result["notifying_events"] = [bool(c[3]["Notifying"]) for c in changes if c[1] == notify_path and "Notifying" in c[3]]
    notify.StopNotify()

    fd, mtu = notify.AcquireNotify({})
    result["mtu"] = int(mtu)
    sock = socket.socket(fileno=fd.take())
    result["socket_type"] = sock.type
    datagrams = []
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        ready, _, _ = select.select([sock], [], [], 0.1)
        if ready:
            datagrams.append(sock.recv(512).hex())
    result["fd_values"] = datagrams
    sock.close()
    device.Disconnect()
    run_loop_until(lambda: any(c[1] == path and c[3].get("Connected") is not None and not c[3]["Connected"] for c in changes), 5)
    result["after_disconnect"] = [sorted(c[3].keys()) for c in changes if c[1] == path][-2:]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
