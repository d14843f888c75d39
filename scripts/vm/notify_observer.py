#!/usr/bin/python3
"""A second GATT client inside the VM: connects the board with address argv[1] through the
gateway's adapter (hci0) and holds a StartNotify session on its MetaWear notify characteristic,
as bleak would. bluetoothd then refuses AcquireNotify to anyone else, which drives mwgated onto
its StartNotify path. Touches /tmp/observer-ready once subscribed; runs until terminated."""
import sys
import time

import dbus

NOTIFY = "326a9006-85cb-9195-d9dd-464cfbbae75a"
address = sys.argv[1].upper()
bus = dbus.SystemBus()
manager = dbus.Interface(bus.get_object("org.bluez", "/"), "org.freedesktop.DBus.ObjectManager")
adapter = dbus.Interface(bus.get_object("org.bluez", "/org/bluez/hci0"), "org.bluez.Adapter1")


def find(predicate):
    for path, interfaces in manager.GetManagedObjects().items():
        if predicate(str(path), interfaces):
            return str(path), interfaces
    return None, None


def device():
    return find(lambda p, i: "org.bluez.Device1" in i and str(i["org.bluez.Device1"]["Address"]).upper() == address
                and p.startswith("/org/bluez/hci0/"))


# The filter mwgated sets: with DuplicateData true the scan saw no board in 90 s on btvirt.
adapter.SetDiscoveryFilter({"Transport": "le", "DuplicateData": False})
adapter.StartDiscovery()
deadline = time.time() + 60
path = None
while time.time() < deadline and not path:
    path, _ = device()
    time.sleep(0.5)
adapter.StopDiscovery()
print(f"observer: found {address} at {path}", flush=True)
dev = dbus.Interface(bus.get_object("org.bluez", path), "org.bluez.Device1")
for attempt in range(5):
    try:
        dev.Connect(timeout=30)
        break
    except dbus.DBusException as error:
        print(f"observer: Connect: {error}", flush=True)
        time.sleep(1)
chrc_path = None
while time.time() < deadline + 60 and not chrc_path:
    chrc_path, _ = find(lambda p, i: p.startswith(path + "/") and "org.bluez.GattCharacteristic1" in i
                        and str(i["org.bluez.GattCharacteristic1"]["UUID"]) == NOTIFY)
    time.sleep(0.2)
chrc = dbus.Interface(bus.get_object("org.bluez", chrc_path), "org.bluez.GattCharacteristic1")
chrc.StartNotify()
print(f"observer: StartNotify on {chrc_path}", flush=True)
open("/tmp/observer-ready", "w").close()
while True:
    time.sleep(3600)
