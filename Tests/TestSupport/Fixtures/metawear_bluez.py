'''python3-dbusmock template: a BlueZ 5.66 stand-in with MetaWear GATT objects.

An independent peer (dbus-python marshalling) for the BlueZ client's cross-check tests.
Written for mwgate from the BlueZ D-Bus API; it avoids the stock bluez5 template's
known problems (Connect leaving Connected false, discovery needing a filter first).

Control interface org.mwgate.BlueZMock on "/":
  AddBoard(s address, s name)           device object appears (as if advertised)
  FailNextConnect(s address, s error, s message)
  Notify(s address, ay value)           one notification from the notify characteristic
  DropLink(s address)                   ServicesResolved=false, Connected=false, fd hang-up
  RemoveBoard(s address)                device object and its GATT objects vanish
  Writes(s address) -> a(ays)           bytes and `type` option of every WriteValue on 9001
  SetNotifyAcquirable(s address, b)     whether the notify characteristic offers AcquireNotify
  State(s address) -> a{sv}             Notifying, acquired fd, discovery state
'''

import os
import socket

import dbus
import dbus.service
from dbusmock import mockobject

BUS_NAME = 'org.bluez'
MAIN_OBJ = '/'
SYSTEM_BUS = True
IS_OBJECT_MANAGER = True
MAIN_IFACE = 'org.mwgate.BlueZMock'

ADAPTER_IFACE = 'org.bluez.Adapter1'
DEVICE_IFACE = 'org.bluez.Device1'
SERVICE_IFACE = 'org.bluez.GattService1'
CHAR_IFACE = 'org.bluez.GattCharacteristic1'
ADAPTER = '/org/bluez/hci0'

METAWEAR_SERVICE = '326a9000-85cb-9195-d9dd-464cfbbae75a'
COMMAND_CHAR = '326a9001-85cb-9195-d9dd-464cfbbae75a'
NOTIFY_CHAR = '326a9006-85cb-9195-d9dd-464cfbbae75a'
DIS_SERVICE = '0000180a-0000-1000-8000-00805f9b34fb'
DIS_STRINGS = {
    '00002a26-0000-1000-8000-00805f9b34fb': '1.7.3',
    '00002a24-0000-1000-8000-00805f9b34fb': '5',
    '00002a27-0000-1000-8000-00805f9b34fb': '0.4',
    '00002a29-0000-1000-8000-00805f9b34fb': 'MbientLab Inc',
    '00002a25-0000-1000-8000-00805f9b34fb': '055B9E',
}

boards = {}
discovery = {'filter': None, 'active': False}
# Adapters whose discovery runs (hci0's is also discovery['active']).
discovering = set()


def error(name, message=''):
    return dbus.exceptions.DBusException(message, name=name)


def device_path(address):
    return ADAPTER + '/dev_' + address.upper().replace(':', '_')


def emit_added(path):
    obj = mockobject.objects[path]
    obj.object_manager_emit_added(path)


def emit_removed(path):
    obj = mockobject.objects[path]
    interfaces = dbus.Array(list(obj.props.keys()) + ['org.freedesktop.DBus.Properties',
                                                       'org.freedesktop.DBus.Introspectable'], signature='s')
    root = mockobject.objects['/']
    root.EmitSignal('org.freedesktop.DBus.ObjectManager', 'InterfacesRemoved', 'oas',
                    [dbus.ObjectPath(path), interfaces])


def load(mock, parameters):
    add_adapter(mock, ADAPTER, '00:11:22:33:44:55', True)


def add_adapter(mock, path, address, powered):
    mock.AddObject(path, ADAPTER_IFACE, {
        'Address': dbus.String(address),
        'AddressType': dbus.String('public'),
        'Name': dbus.String('mwgate-test'),
        'Alias': dbus.String('mwgate-test'),
        'Powered': dbus.Boolean(powered),
        'PowerState': dbus.String('on' if powered else 'off'),
        'Discovering': dbus.Boolean(False),
        'Roles': dbus.Array(['central', 'peripheral'], signature='s'),
        'UUIDs': dbus.Array([], signature='s'),
    }, [
        ('SetDiscoveryFilter', 'a{sv}', '', set_discovery_filter),
        ('StartDiscovery', '', '', start_discovery),
        ('StopDiscovery', '', '', stop_discovery),
        ('RemoveDevice', 'o', '', remove_device),
    ])
    emit_added(path)


def set_discovery_filter(adapter, filter_):
    for key, value in filter_.items():
        if key not in ('UUIDs', 'RSSI', 'Pathloss', 'Transport', 'DuplicateData', 'Discoverable', 'Pattern'):
            raise error('org.bluez.Error.InvalidArguments', 'Invalid Arguments in method call')
    discovery['filter'] = dict(filter_)


def start_discovery(adapter):
    if not adapter.props[ADAPTER_IFACE]['Powered']:
        raise error('org.bluez.Error.NotReady', 'Resource Not Ready')
    if adapter.path in discovering:
        raise error('org.bluez.Error.InProgress', 'Operation already in progress')
    discovering.add(adapter.path)
    discovery['active'] = ADAPTER in discovering
    adapter.UpdateProperties(ADAPTER_IFACE, {'Discovering': dbus.Boolean(True)})


def stop_discovery(adapter):
    if adapter.path not in discovering:
        raise error('org.bluez.Error.Failed', 'No discovery started')
    discovering.discard(adapter.path)
    discovery['active'] = ADAPTER in discovering
    adapter.UpdateProperties(ADAPTER_IFACE, {'Discovering': dbus.Boolean(False)})


def remove_device(adapter, path):
    for address, board in list(boards.items()):
        if board['path'] == path:
            remove_board(address)
            return
    raise error('org.bluez.Error.DoesNotExist', 'Does Not Exist')


def remove_board(address):
    board = boards.pop(address)
    close_fd(board)
    for path in sorted(board['gatt'], reverse=True):
        mockobject.objects['/'].RemoveObject(path)
    emit_removed(board['path'])
    mockobject.objects['/'].RemoveObject(board['path'])


def close_fd(board):
    if board.get('fd') is not None:
        board['fd'].close()
        board['fd'] = None


def board_for(obj):
    for board in boards.values():
        if obj.path == board['path'] or obj.path.startswith(board['path'] + '/'):
            return board
    raise error('org.freedesktop.DBus.Error.UnknownObject', 'no such object')


def connect(device):
    board = board_for(device)
    if board['failures']:
        name, message = board['failures'].pop(0)
        if 'abort' in message:
            # BlueZ shows a brief Connected=true before reporting the abort.
            device.UpdateProperties(DEVICE_IFACE, {'Connected': dbus.Boolean(True)})
            device.UpdateProperties(DEVICE_IFACE, {'Connected': dbus.Boolean(False)})
        raise error(name, message)
    device.UpdateProperties(DEVICE_IFACE, {'Connected': dbus.Boolean(True)})
    if not board['gatt']:
        export_gatt(board)
    device.UpdateProperties(DEVICE_IFACE, {'ServicesResolved': dbus.Boolean(True)})


def disconnect(device):
    board = board_for(device)
    drop(board, device)


def drop(board, device):
    close_fd(board)
    device.UpdateProperties(DEVICE_IFACE, {'ServicesResolved': dbus.Boolean(False)})
    device.UpdateProperties(DEVICE_IFACE, {'Connected': dbus.Boolean(False)})


def export_gatt(board):
    root = mockobject.objects['/']
    base = board['path']
    service = base + '/service000c'
    root.AddObject(service, SERVICE_IFACE, {
        'UUID': dbus.String(METAWEAR_SERVICE), 'Primary': dbus.Boolean(True),
        'Device': dbus.ObjectPath(base), 'Includes': dbus.Array([], signature='o'),
        'Handle': dbus.UInt16(0x0c)}, [])
    command = service + '/char000d'
    root.AddObject(command, CHAR_IFACE, {
        'UUID': dbus.String(COMMAND_CHAR), 'Service': dbus.ObjectPath(service),
        'Value': dbus.Array([], signature='y'),
        'Flags': dbus.Array(['read', 'write-without-response', 'write'], signature='s'),
        'WriteAcquired': dbus.Boolean(False), 'MTU': dbus.UInt16(247), 'Handle': dbus.UInt16(0x0d)}, [
        ('WriteValue', 'aya{sv}', '', write_value),
        ('ReadValue', 'a{sv}', 'ay', lambda self, options: dbus.Array([], signature='y')),
    ])
    notify = service + '/char000f'
    properties = {
        'UUID': dbus.String(NOTIFY_CHAR), 'Service': dbus.ObjectPath(service),
        'Value': dbus.Array([], signature='y'), 'Notifying': dbus.Boolean(False),
        'Flags': dbus.Array(['read', 'notify'], signature='s'), 'MTU': dbus.UInt16(247),
        'Handle': dbus.UInt16(0x0f)}
    if board['acquirable']:
        properties['NotifyAcquired'] = dbus.Boolean(False)
    root.AddObject(notify, CHAR_IFACE, properties, [
        ('StartNotify', '', '', start_notify),
        ('StopNotify', '', '', stop_notify),
        ('AcquireNotify', 'a{sv}', 'hq', acquire_notify),
    ])
    dis = base + '/service0020'
    root.AddObject(dis, SERVICE_IFACE, {
        'UUID': dbus.String(DIS_SERVICE), 'Primary': dbus.Boolean(True),
        'Device': dbus.ObjectPath(base), 'Includes': dbus.Array([], signature='o'),
        'Handle': dbus.UInt16(0x20)}, [])
    paths = [service, command, notify, dis]
    for index, (uuid, text) in enumerate(sorted(DIS_STRINGS.items())):
        path = dis + '/char%04x' % (0x21 + 2 * index)
        root.AddObject(path, CHAR_IFACE, {
            'UUID': dbus.String(uuid), 'Service': dbus.ObjectPath(dis),
            'Value': dbus.Array([], signature='y'), 'Flags': dbus.Array(['read'], signature='s'),
            'Handle': dbus.UInt16(0x21 + 2 * index)}, [
            ('ReadValue', 'a{sv}', 'ay',
             lambda self, options, text=text: dbus.Array([dbus.Byte(b) for b in text.encode()], signature='y')),
        ])
        paths.append(path)
    board['gatt'] = paths
    board['notify'] = notify
    for path in paths:
        emit_added(path)


def write_value(char, value, options):
    board = board_for(char)
    if not mockobject.objects[board['path']].props[DEVICE_IFACE]['Connected']:
        raise error('org.bluez.Error.NotConnected', 'Not Connected')
    board['writes'].append((bytes(value), str(options.get('type', ''))))


def start_notify(char):
    board = board_for(char)
    if board.get('fd') is not None:
        raise error('org.bluez.Error.NotPermitted', 'Notify acquired')
    board['start_notify_calls'] += 1
    char.UpdateProperties(CHAR_IFACE, {'Notifying': dbus.Boolean(True)})


def stop_notify(char):
    board_for(char)
    if not char.props[CHAR_IFACE]['Notifying']:
        raise error('org.bluez.Error.Failed', 'No notify session started')
    char.UpdateProperties(CHAR_IFACE, {'Notifying': dbus.Boolean(False)})


def acquire_notify(char, options):
    board = board_for(char)
    if not board['acquirable']:
        raise error('org.bluez.Error.NotSupported', 'Operation is not supported')
    if char.props[CHAR_IFACE]['Notifying']:
        raise error('org.bluez.Error.InProgress', 'In Progress')
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.setblocking(False)
    board['fd'] = ours
    fd = dbus.types.UnixFd(theirs.fileno())
    theirs.close()
    return (fd, dbus.UInt16(247))


@dbus.service.method(MAIN_IFACE, in_signature='ss', out_signature='s')
def AddBoard(self, address, name):
    address = address.upper()
    path = device_path(address)
    boards[address] = {'path': path, 'failures': [], 'writes': [], 'gatt': [], 'fd': None,
                       'acquirable': False, 'start_notify_calls': 0, 'notify': None}
    self.AddObject(path, DEVICE_IFACE, {
        'Address': dbus.String(address), 'AddressType': dbus.String('random'),
        'Name': dbus.String(name), 'Alias': dbus.String(name), 'Paired': dbus.Boolean(False),
        'Bonded': dbus.Boolean(False), 'Trusted': dbus.Boolean(False), 'Blocked': dbus.Boolean(False),
        'LegacyPairing': dbus.Boolean(False), 'RSSI': dbus.Int16(-58),
        'Connected': dbus.Boolean(False), 'UUIDs': dbus.Array([METAWEAR_SERVICE], signature='s'),
        'Adapter': dbus.ObjectPath(ADAPTER), 'ServicesResolved': dbus.Boolean(False),
        'ManufacturerData': dbus.Dictionary({dbus.UInt16(0x626d): dbus.Array([dbus.Byte(1)], signature='y', variant_level=1)},
                                            signature='qv'),
    }, [
        ('Connect', '', '', connect),
        ('Disconnect', '', '', disconnect),
    ])
    emit_added(path)
    return path


@dbus.service.method(MAIN_IFACE, in_signature='ssb', out_signature='')
def AddAdapter(self, name, address, powered):
    add_adapter(self, '/org/bluez/' + name, address, bool(powered))


@dbus.service.method(MAIN_IFACE, in_signature='sb', out_signature='')
def SetAdapterPowered(self, name, powered):
    """As the kernel's power change reaches bluetoothd: powering off ends the adapter's discovery."""
    adapter = mockobject.objects['/org/bluez/' + name]
    if not powered and adapter.path in discovering:
        discovering.discard(adapter.path)
        discovery['active'] = ADAPTER in discovering
        adapter.UpdateProperties(ADAPTER_IFACE, {'Discovering': dbus.Boolean(False)})
    adapter.UpdateProperties(ADAPTER_IFACE, {'Powered': dbus.Boolean(bool(powered)),
                                             'PowerState': dbus.String('on' if powered else 'off')})


@dbus.service.method(MAIN_IFACE, in_signature='', out_signature='as')
def DiscoveringAdapters(self):
    return dbus.Array(sorted(discovering), signature='s')


@dbus.service.method(MAIN_IFACE, in_signature='sss', out_signature='')
def FailNextConnect(self, address, name, message):
    boards[address.upper()]['failures'].append((name, message))


@dbus.service.method(MAIN_IFACE, in_signature='sb', out_signature='')
def SetNotifyAcquirable(self, address, acquirable):
    boards[address.upper()]['acquirable'] = bool(acquirable)


@dbus.service.method(MAIN_IFACE, in_signature='say', out_signature='')
def Notify(self, address, value):
    board = boards[address.upper()]
    data = bytes(value)
    if board.get('fd') is not None:
        board['fd'].send(data)
        return
    char = mockobject.objects[board['notify']]
    if char.props[CHAR_IFACE]['Notifying']:
        char.UpdateProperties(CHAR_IFACE, {'Value': dbus.Array([dbus.Byte(b) for b in data], signature='y')})


@dbus.service.method(MAIN_IFACE, in_signature='s', out_signature='')
def DropLink(self, address):
    board = boards[address.upper()]
    drop(board, mockobject.objects[board['path']])


@dbus.service.method(MAIN_IFACE, in_signature='s', out_signature='')
def RemoveBoard(self, address):
    remove_board(address.upper())


@dbus.service.method(MAIN_IFACE, in_signature='s', out_signature='a(ays)')
def Writes(self, address):
    return dbus.Array([dbus.Struct((dbus.ByteArray(data), kind), signature='ays')
                       for data, kind in boards[address.upper()]['writes']], signature='(ays)')


@dbus.service.method(MAIN_IFACE, in_signature='s', out_signature='a{sv}')
def State(self, address):
    board = boards[address.upper()]
    notifying = False
    if board['notify'] is not None:
        notifying = bool(mockobject.objects[board['notify']].props[CHAR_IFACE]['Notifying'])
    return {
        'Connected': dbus.Boolean(bool(mockobject.objects[board['path']].props[DEVICE_IFACE]['Connected']), variant_level=1),
        'Notifying': dbus.Boolean(notifying, variant_level=1),
        'Acquired': dbus.Boolean(board.get('fd') is not None, variant_level=1),
        'StartNotifyCalls': dbus.Int32(board['start_notify_calls'], variant_level=1),
        'Discovering': dbus.Boolean(discovery['active'], variant_level=1),
        'FilterTransport': dbus.String(str((discovery['filter'] or {}).get('Transport', '')), variant_level=1),
        'FilterUUIDs': dbus.Array([str(u) for u in (discovery['filter'] or {}).get('UUIDs', [])],
                                  signature='s', variant_level=1),
    }
