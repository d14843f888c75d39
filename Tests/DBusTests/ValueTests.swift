import Foundation
import CDBus
import Testing
@testable import DBus

/// Every type, nested, as one body.
let everyType: [DBusValue] = [
    .byte(0xfe), .int16(-2), .uint16(65535), .int32(-7), .uint32(4_000_000_000),
    .int64(-9_000_000_000_000), .uint64(18_000_000_000_000_000_000), .double(3.25),
    .string("héllo ✓"), .objectPath("/org/mwgate/x_1"), .signature(try! DBusSignature("a{sv}")),
    .boolean(true),
    .array(element: .byte, [.byte(1), .byte(2), .byte(255)]),
    .array(element: .string, []),
    .dictionary(key: .string, value: .variant, [
        DBusDictionaryEntry(key: .string("n"), value: .variant(.int32(1))),
        DBusDictionaryEntry(key: .string("nested"), value: .variant(.variant(.array(element: .double, [.double(1.5)])))),
        DBusDictionaryEntry(key: .string("map"), value: .variant(.dictionary(key: .uint16, value: .variant, [
            DBusDictionaryEntry(key: .uint16(0x0274), value: .variant(.array(element: .byte, [.byte(9)]))),
        ]))),
    ]),
    .structure([.int32(1), .structure([.string("deep"), .array(element: .objectPath, [.objectPath("/a")])])]),
    .array(element: .structure([.string, .variant]), [.structure([.string("k"), .variant(.boolean(false))])]),
]

@Suite struct SignatureTests {
    @Test func parsesValidSignatures() throws {
        #expect(try DBusSignature("a{oa{sa{sv}}}").types == [ObjectRegistry.managedObjectsType])
        #expect(try DBusSignature("(hq)ay").description == "(hq)ay")
        #expect(try DBusSignature("").types.isEmpty)
        #expect(try DBusType("a{qv}") == .dictionary(key: .uint16, value: .variant))
    }

    @Test(arguments: ["a", "a{vs}", "()", "(i", "a{s}", "a{sss}", "z", "{sv}", String(repeating: "a", count: 33) + "i"])
    func rejectsInvalidSignatures(_ text: String) {
        #expect(throws: DBusSignatureError.self) { try DBusSignature(text) }
    }

    @Test func valueReportsItsType() {
        #expect(DBusSignature(types: everyType.map(\.type)).description == "ynqiuxtdsogbayasa{sv}(i(sao))a(sv)")
    }
}

@Suite struct MessageCodingTests {
    private func roundTrip(_ body: [DBusValue]) throws -> DBusMessage {
        let message = DBusMessage.signal(path: "/t", interface: "org.mwgate.T", member: "M", body: body)
        let raw = try MessageWriter.make(message)
        defer { dbus_message_unref(raw) }
        return try MessageReader.read(raw)
    }

    @Test func everyTypeSurvivesEncoding() throws {
        let decoded = try roundTrip(everyType)
        #expect(decoded.body == everyType)
        #expect(decoded.member == "M")
        #expect(decoded.path == "/t")
    }

    @Test func rejectsArrayElementsOfTheWrongType() {
        let bad: [DBusValue] = [.array(element: .int32, [.int32(1), .string("two")])]
        #expect(throws: DBusTypeMismatch.self) { try roundTrip(bad) }
    }

    @Test func rejectsInvalidNamesInsteadOfAborting() {
        #expect(throws: DBusValidationError.self) {
            try MessageWriter.make(.signal(path: "/t", interface: "no dots", member: "M"))
        }
        #expect(throws: DBusValidationError.self) {
            try MessageWriter.make(.signal(path: "/t", interface: "a.b", member: "M", body: [.string("nul\u{0}inside")]))
        }
        let trailing = "/trailing/"
        #expect(throws: DBusValidationError.self) { try DBusObjectPath(trailing) }
    }

    @Test func typedAccessorsConvertAndReportMismatches() throws {
        let dictionary = everyType[14]
        let properties = try dictionary.as([String: DBusValue].self)
        #expect(try properties["n"]?.as(Int32.self) == 1)
        #expect(try properties["map"]?.as([UInt16: DBusValue].self)[0x0274]?.as([UInt8].self) == [9])
        #expect(try DBusValue.variant(.string("x")).as(String.self) == "x")
        let mismatch = #expect(throws: DBusTypeMismatch.self) { try DBusValue.string("x").as(UInt32.self) }
        #expect(mismatch?.expected == "u")
        #expect(mismatch?.actual == "s")
        let message = DBusMessage(kind: .methodReturn, body: [.string("a"), .int32(1)])
        let (text, number) = try message.decode(String.self, Int32.self)
        #expect(text == "a" && number == 1)
        let wrong = #expect(throws: DBusTypeMismatch.self) { try message.decode(String.self) }
        #expect(wrong?.expected == "s")
        #expect(wrong?.actual == "si")
    }

    @Test func matchRuleTextIsEscaped() {
        let rule = DBusMatchRule(sender: "org.bluez", interface: "org.freedesktop.DBus.Properties",
                                 member: "PropertiesChanged", pathNamespace: "/org/bluez", arguments: [0: "it's"])
        #expect(rule.description == "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path_namespace='/org/bluez',arg0='it'\\''s'")
    }
}
