import CDBus
@testable import DBus
import Synchronization
import TestSupport
import Testing

/// Builds a libdbus signal as the bus would deliver it (sender set) and reads it in place.
private func withView<T>(path: DBusObjectPath = "/org/bluez/hci0/dev_01/char0010", interface: String = "org.test.I",
                         member: String = "Changed", sender: String = ":1.7", destination: String? = nil,
                         arguments: [DBusValue], _ body: (borrowing DBusSignalView) throws -> T) throws -> T {
    let raw = try MessageWriter.make(.signal(path: path, interface: interface, member: member, body: arguments,
                                             destination: destination))
    defer { dbus_message_unref(raw) }
    dbus_message_set_sender(raw, sender)
    return try body(DBusSignalView(raw))
}

private let gattValue: [UInt8] = [0x13, 0x05, 0x01, 0x00, 0xFF, 0x7F, 0x00, 0x80]

/// PropertiesChanged of a GATT characteristic: `Value` among other changes.
private let propertiesChanged: [DBusValue] = [
    .string("org.bluez.GattCharacteristic1"),
    .dictionary(key: .string, value: .variant, [
        DBusDictionaryEntry(key: .string("Notifying"), value: .variant(.boolean(true))),
        DBusDictionaryEntry(key: .string("Value"), value: .variant(.array(element: .byte, gattValue.map { .byte($0) }))),
        DBusDictionaryEntry(key: .string("Flags"), value: .variant(.array(element: .string, [.string("notify")]))),
    ]),
    .array(element: .string, []),
]

struct SignalViewTests {
    @Test func readsHeaderFieldsAndSingleArgumentsInPlace() throws {
        let (header, arguments, kept) = try withView(arguments: [.string("a"), .int32(-4), .objectPath("/x")]) { view in
            ([view.sender, view.path.rawValue, view.interface, view.member],
             [try view.argument(1), try view.argument(2), try view.argument(3), try view.argument(-1)],
             try view.signal())
        }
        #expect(header == [":1.7", "/org/bluez/hci0/dev_01/char0010", "org.test.I", "Changed"])
        #expect(arguments == [.int32(-4), .objectPath("/x"), nil, nil])
        #expect(kept.body == [.string("a"), .int32(-4), .objectPath("/x")])
        #expect(kept.sender == ":1.7")
    }

    @Test func findsOneChangedPropertyAmongOthers() throws {
        let (bytes, properties) = try withView(arguments: propertiesChanged) { view in
            // Notifying and Flags are no byte arrays: no bytes, rather than a wrong reading.
            ([view.changedBytes("Value"), view.changedBytes("Notifying"), view.changedBytes("Flags")],
             [try view.changedProperty("Notifying"), try view.changedProperty("Flags"), try view.changedProperty("Missing")])
        }
        #expect(bytes == [gattValue, nil, nil])
        #expect(properties == [.boolean(true), .array(element: .string, [.string("notify")]), nil])
        let empty: [DBusValue] = [
            .string("org.bluez.GattCharacteristic1"),
            .dictionary(key: .string, value: .variant, [
                DBusDictionaryEntry(key: .string("Value"), value: .variant(.array(element: .byte, []))),
            ]),
            .array(element: .string, []),
        ]
        #expect(try withView(arguments: empty) { view in view.changedBytes("Value") } == [])
    }

    @Test func otherShapesAreNotMistakenForPropertyChanges() throws {
        // A string where the a{sv} belongs, a dictionary of another type, no arguments at all.
        let notADictionary = try withView(arguments: [.string("i"), .string("Value")]) { view in
            (view.changedBytes("Value"), try view.changedProperty("Value"))
        }
        #expect(notADictionary.0 == nil)
        #expect(notADictionary.1 == nil)
        let wrongDictionary: [DBusValue] = [
            .string("i"),
            .dictionary(key: .string, value: .string, [DBusDictionaryEntry(key: .string("Value"), value: .string("x"))]),
        ]
        #expect(try withView(arguments: wrongDictionary) { view in try view.changedProperty("Value") } == nil)
        let noArguments = try withView(arguments: []) { view in (view.changedBytes("Value"), try view.argument(0)) }
        #expect(noArguments.0 == nil)
        #expect(noArguments.1 == nil)
    }

    /// Each rule against the same signal: sender :1.7, path /org/bluez/hci0/dev_01/char0010,
    /// org.test.I.Changed, to :1.9, arguments ("org.bluez.GattCharacteristic1", /org/bluez/hci0).
    @Test(arguments: [
        (DBusMatchRule(), true),
        (DBusMatchRule(sender: ":1.7"), true),
        (DBusMatchRule(sender: ":1.70"), false),
        (DBusMatchRule(sender: ":1."), false),
        (DBusMatchRule(interface: "org.test.I", member: "Changed"), true),
        (DBusMatchRule(interface: "org.test.I2"), false),
        (DBusMatchRule(member: "Change"), false),
        (DBusMatchRule(path: "/org/bluez/hci0/dev_01/char0010"), true),
        (DBusMatchRule(path: "/org/bluez/hci0/dev_01"), false),
        (DBusMatchRule(pathNamespace: "/org/bluez/hci0/dev_01"), true),
        (DBusMatchRule(pathNamespace: "/org/bluez/hci0/dev_01/char0010"), true),
        (DBusMatchRule(pathNamespace: "/org/bluez/hci0/dev_0"), false),
        (DBusMatchRule(pathNamespace: "/"), true),
        (DBusMatchRule(destination: ":1.9"), true),
        (DBusMatchRule(destination: ":1.8"), false),
        (DBusMatchRule(arguments: [0: "org.bluez.GattCharacteristic1"]), true),
        (DBusMatchRule(arguments: [0: "org.bluez.GattCharacteristic"]), false),
        (DBusMatchRule(arguments: [0: "org.bluez.GattCharacteristic1\0"]), false),
        // argN matches strings only, not object paths; argNpath takes both.
        (DBusMatchRule(arguments: [1: "/org/bluez/hci0"]), false),
        (DBusMatchRule(arguments: [5: "x"]), false),
        (DBusMatchRule(argumentPaths: [1: "/org/bluez/hci0"]), true),
        (DBusMatchRule(argumentPaths: [1: "/org/bluez/"]), true),
        (DBusMatchRule(argumentPaths: [1: "/org/bluez/hci0/dev_01"]), false),
        (DBusMatchRule(argumentPaths: [1: "/org/blue"]), false),
    ])
    func matchesWithoutDecoding(rule: DBusMatchRule, expected: Bool) throws {
        let arguments: [DBusValue] = [.string("org.bluez.GattCharacteristic1"), .objectPath("/org/bluez/hci0")]
        let matched = try withView(destination: ":1.9", arguments: arguments) { view in
            rule.matches(view, senderOwner: nil)
        }
        #expect(matched == expected, "\(rule)")
    }

    @Test func wellKnownSenderMatchesItsCurrentOwner() throws {
        let rule = DBusMatchRule(sender: "org.bluez", member: "Changed")
        // Owner not yet known (the bus filtered by name, so the signal is trusted), the
        // sender itself, another process owning the name now, nobody owning it.
        let matched = try withView(arguments: []) { view in
            [nil, ":1.7", ":1.8", ""].map { owner in rule.matches(view, senderOwner: owner) }
        }
        #expect(matched == [true, true, false, false])
    }

    @Test(.enabled(if: TestBus.isAvailable)) func handlerReadsGattValuesFromRealPropertiesChanged() async throws {
        try await withBus { bus, receiver in
            let sender = try await DBusConnection(address: bus.address)
            defer { sender.close() }
            let values = Mutex<[[UInt8]]>([])
            let rule = DBusMatchRule(sender: sender.uniqueName, interface: DBusStandardInterface.properties,
                                     member: "PropertiesChanged", path: "/dev/char",
                                     arguments: [0: "org.bluez.GattCharacteristic1"])
            _ = try await receiver.addSignalHandler(matchingAny: [rule]) { signal in
                guard let bytes = signal.changedBytes("Value") else { return }
                values.withLock { $0.append(bytes) }
            }
            for index in 0..<200 as Range<UInt8> {
                let value = DBusValue.array(element: .byte, [index, 0xFF, 0x00].map { .byte($0) })
                try sender.emitPropertiesChanged(path: "/dev/char", interface: "org.bluez.GattCharacteristic1",
                                                 changed: ["Value": value])
                // Another interface on the same object: filtered out by arg0.
                try sender.emitPropertiesChanged(path: "/dev/char", interface: "org.bluez.Device1",
                                                 changed: ["Value": value])
            }
            try await waitUntil("200 values") { values.withLock { $0.count } >= 200 }
            try await Task.sleep(for: .milliseconds(50))
            #expect(values.withLock { $0 } == (0..<200).map { [UInt8($0), 0xFF, 0x00] })
        }
    }
}
