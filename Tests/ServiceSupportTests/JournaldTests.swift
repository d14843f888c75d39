import Foundation
import Logging
import Synchronization
import Testing
@testable import ServiceSupport

/// An independent parser of journald's native format, so the handler's own decoder is not
/// used to check its encoder.
func parseNative(_ bytes: [UInt8]) -> [(String, String)]? {
    var fields: [(String, String)] = []
    var index = 0
    while index < bytes.count {
        var nameEnd = index
        while nameEnd < bytes.count, bytes[nameEnd] != 0x3D, bytes[nameEnd] != 0x0A { nameEnd += 1 }
        guard nameEnd < bytes.count else { return nil }
        let name = String(decoding: bytes[index..<nameEnd], as: UTF8.self)
        if bytes[nameEnd] == 0x3D {
            var valueEnd = nameEnd + 1
            while valueEnd < bytes.count, bytes[valueEnd] != 0x0A { valueEnd += 1 }
            fields.append((name, String(decoding: bytes[(nameEnd + 1)..<valueEnd], as: UTF8.self)))
            index = valueEnd + 1
        } else {
            guard nameEnd + 9 <= bytes.count else { return nil }
            let length = bytes[(nameEnd + 1)...(nameEnd + 8)].reversed().reduce(0) { $0 << 8 | Int($1) }
            let start = nameEnd + 9
            guard start + length < bytes.count, bytes[start + length] == 0x0A else { return nil }
            fields.append((name, String(decoding: bytes[start..<(start + length)], as: UTF8.self)))
            index = start + length + 1
        }
    }
    return fields
}

/// The next datagram's fields; fails the test when none arrives or it is malformed.
func nextFields(_ receiver: DatagramReceiver, sourceLocation: SourceLocation = #_sourceLocation) throws -> [(String, String)] {
    let datagram = try #require(receiver.receive(), sourceLocation: sourceLocation)
    return try #require(parseNative(datagram.bytes), sourceLocation: sourceLocation)
}

final class TestClock: Sendable {
    private let offset = Mutex<Duration>(.zero)
    private let base = ContinuousClock.now
    func advance(_ by: Duration) { offset.withLock { $0 += by } }
    var now: ContinuousClock.Instant { base + offset.withLock { $0 } }
}

@Suite struct JournaldTests {
    @Test func nativeFieldsExactly() throws {
        let receiver = try DatagramReceiver()
        let writer = JournalWriter(identifier: "mwgated", output: .native(socketPath: receiver.name))
        #expect(writer.output == .native(socketPath: receiver.name))
        var logger = Logger(label: "test") { JournaldLogHandler(label: $0, writer: writer) }
        logger[metadataKey: "session"] = "s-42"
        let line: UInt = #line + 1
        logger.warning("board lost", metadata: ["board": "C8:4B:AA:01:02:03", "gpsMode": "3", "_secret": "x", "9lives": "y", "message": "clash"], source: "Boards")
        let datagram = try #require(receiver.receive())
        let fields = try #require(parseNative(datagram.bytes))
        let expected: [(String, String)] = [
            ("MESSAGE", "board lost"), ("PRIORITY", "4"), ("SYSLOG_IDENTIFIER", "mwgated"),
            ("CODE_FILE", "ServiceSupportTests/JournaldTests.swift"), ("CODE_LINE", "\(line)"),
            ("CODE_FUNC", "nativeFieldsExactly()"), ("LOGGER_SOURCE", "Boards"),
            ("X_9LIVES", "y"), ("SECRET", "x"), ("BOARD", "C8:4B:AA:01:02:03"), ("GPS_MODE", "3"),
            ("META_MESSAGE", "clash"), ("SESSION", "s-42"),
        ]
        #expect(fields.map(\.0) == expected.map(\.0))
        #expect(fields.map(\.1) == expected.map(\.1))
        #expect(fields.allSatisfy { JournalFieldName.isValid($0.0) })
    }

    @Test func multiLineValuesUseTheBinaryForm() throws {
        let receiver = try DatagramReceiver()
        let writer = JournalWriter(identifier: "mwgated", output: .native(socketPath: receiver.name))
        let logger = Logger(label: "test") { JournaldLogHandler(label: $0, writer: writer) }
        logger.info("multi-line\nmessage")
        let bytes = try #require(receiver.receive()).bytes
        // The reference's capture from python-systemd, byte for byte.
        let expected = Array("MESSAGE\n".utf8) + [0x12, 0, 0, 0, 0, 0, 0, 0] + Array("multi-line\nmessage\n".utf8)
        #expect(Array(bytes.prefix(expected.count)) == expected)
        let fields = try #require(parseNative(bytes))
        #expect(fields.first?.1 == "multi-line\nmessage")
        #expect(fields.first { $0.0 == "PRIORITY" }?.1 == "6")
        #expect(JournalEntry(decoding: bytes)?["MESSAGE"] == "multi-line\nmessage")
    }

    @Test func messageIDFromTheCatalogue() throws {
        let receiver = try DatagramReceiver()
        let writer = JournalWriter(identifier: "mwgated", output: .native(socketPath: receiver.name))
        let logger = Logger(label: "test") { JournaldLogHandler(label: $0, writer: writer) }
        logger.event(.fixGained, "GNSS fix acquired", metadata: ["sats": "9"])
        let fields = try nextFields(receiver)
        #expect(fields.first { $0.0 == "MESSAGE_ID" }?.1 == MessageID.fixGained.rawValue)
        #expect(fields.first { $0.0 == "PRIORITY" }?.1 == "5")
        #expect(fields.first { $0.0 == "SATS" }?.1 == "9")
        // A malformed id is kept, but not as MESSAGE_ID.
        logger.info("odd", metadata: ["message_id": "not-an-id"])
        let odd = try nextFields(receiver)
        #expect(!odd.contains { $0.0 == "MESSAGE_ID" })
        #expect(odd.first { $0.0 == "META_MESSAGE_ID" }?.1 == "not-an-id")
    }

    @Test func catalogueIDsAreFixedAndUnique() {
        let ids = MessageID.catalogue.map(\.rawValue)
        #expect(ids.count == 10)
        #expect(Set(ids).count == ids.count)
        #expect(Set(MessageID.catalogue.map(\.name)).count == ids.count)
        for id in ids { #expect(MessageID(id, name: "x") != nil, "\(id)") }
        #expect(MessageID.sessionStarted.rawValue == "5a0c9f3e2b7d4e61a8f1c2d3e4b5a601")
        #expect(MessageID("xyz", name: "bad") == nil)
    }

    @Test func largeEntriesTravelInASealedMemfd() throws {
        let receiver = try DatagramReceiver()
        let writer = JournalWriter(identifier: "mwgated", output: .native(socketPath: receiver.name))
        let logger = Logger(label: "test") { JournaldLogHandler(label: $0, writer: writer) }
        let big = String(repeating: "x", count: 10 << 20)
        logger.info("\(big)")
        let datagram = try #require(receiver.receive())
        #expect(datagram.bytes.isEmpty)
        let fd = try #require(datagram.descriptor)
        defer { close(fd) }
        let seals = fcntl(fd, 1024 + 10)  // F_GET_SEALS
        #expect(seals == 0xF)
        let fields = try #require(parseNative(readAll(descriptor: fd)))
        #expect(fields.first?.0 == "MESSAGE")
        #expect(fields.first?.1.utf8.count == 10 << 20)
    }

    @Test func stderrFallbackWritesPriorityPrefixes() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let writer = JournalWriter(identifier: "mwgated", output: .prefixedLines(fileDescriptor: ends[1]))
        let logger = Logger(label: "test") { JournaldLogHandler(label: $0, writer: writer, logLevel: .debug) }
        logger.error("sync failed", metadata: ["sink": "firestore"])
        logger.debug("two\nlines")
        logger.notice("plain")
        close(ends[1])
        let text = String(decoding: readAll(descriptor: ends[0]), as: UTF8.self)
        #expect(text == "<3>sync failed SINK=firestore\n<7>two\n<7>lines\n<5>plain\n")
    }

    @Test func automaticChoice() throws {
        #expect(JournalOutput.automatic(environment: [:], socketPath: "/nonexistent/socket") == .prefixedLines(fileDescriptor: 2))
        let receiver = try DatagramReceiver()
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        var info = stat()
        fstat(ends[1], &info)
        let stream = "\(info.st_dev):\(info.st_ino)"
        #expect(JournalOutput.automatic(environment: ["JOURNAL_STREAM": stream], socketPath: receiver.name, stderrDescriptor: ends[1])
            == .native(socketPath: receiver.name))
        #expect(JournalOutput.automatic(environment: ["JOURNAL_STREAM": "1:2"], socketPath: receiver.name, stderrDescriptor: ends[1])
            == .prefixedLines(fileDescriptor: ends[1]))
        #expect(JournalOutput.automatic(environment: ["JOURNAL_STREAM": stream], socketPath: "/nonexistent", stderrDescriptor: ends[1])
            == .prefixedLines(fileDescriptor: ends[1]))
    }

    @Test func repeatedErrorsAreLimited() throws {
        let receiver = try DatagramReceiver()
        let clock = TestClock()
        let writer = JournalWriter(
            identifier: "mwgated", output: .native(socketPath: receiver.name),
            limiter: RepeatLimiter(burst: 3, interval: .seconds(30)), now: { clock.now })
        let logger = Logger(label: "test") { JournaldLogHandler(label: $0, writer: writer) }
        for _ in 0..<8 { logger.error("upload refused") }
        logger.error("something else")
        for _ in 0..<5 { logger.info("chatty but not limited") }
        var messages: [String] = []
        while receiver.hasPending(), let datagram = receiver.receive() {
            messages.append(parseNative(datagram.bytes)?.first?.1 ?? "?")
        }
        #expect(messages == Array(repeating: "upload refused", count: 3) + ["something else"]
            + Array(repeating: "chatty but not limited", count: 5))
        clock.advance(.seconds(31))
        logger.error("upload refused")
        let summary = try nextFields(receiver)
        #expect(summary.first?.1 == "suppressed 5 repeated messages like: upload refused")
        #expect(summary.first { $0.0 == "SUPPRESSED" }?.1 == "5")
        #expect(summary.first { $0.0 == "PRIORITY" }?.1 == "4")
        #expect(try nextFields(receiver).first?.1 == "upload refused")
        #expect(!receiver.hasPending())
    }

    @Test func flushReportsAStoppedBurst() throws {
        var limiter = RepeatLimiter(burst: 1, interval: .seconds(10))
        let start = ContinuousClock.now
        #expect(limiter.admit(key: "k", sample: "a", now: start).emit)
        #expect(!limiter.admit(key: "k", sample: "b", now: start).emit)
        #expect(limiter.expire(now: start + .seconds(5)).isEmpty)
        #expect(limiter.expire(now: start + .seconds(10)) == [.init(key: "k", suppressed: 1, sample: "b")])
        #expect(limiter.expire(now: start + .seconds(20)).isEmpty)
    }

    @Test(arguments: [
        ("board", "BOARD"), ("gpsMode", "GPS_MODE"), ("gps.mode", "GPS_MODE"), ("_PID", "PID"),
        ("9lives", "X_9LIVES"), ("BLE_ADDR", "BLE_ADDR"), ("a-b c", "A_B_C"), ("__", nil), ("é", nil),
        (String(repeating: "k", count: 80), String(repeating: "K", count: 64)),
    ] as [(String, String?)])
    func fieldNames(key: String, expected: String?) {
        #expect(JournalFieldName.sanitize(key) == expected)
        if let expected { #expect(JournalFieldName.isValid(expected)) }
    }

    @Test func fieldNameValidity() {
        #expect(!JournalFieldName.isValid("_PID"))
        #expect(!JournalFieldName.isValid("1X"))
        #expect(!JournalFieldName.isValid("gps"))
        #expect(!JournalFieldName.isValid(""))
        #expect(JournalFieldName.isValid("MESSAGE_ID"))
    }
}
