/// Splits a raw byte stream from a receiver into checksum-verified NMEA 0183 sentences.
///
/// Real streams are dirty: CR/LF or bare LF endings, two sentences glued together without a
/// line break, NUL bytes after a reboot, truncated lines and binary garbage between
/// sentences. The framer resynchronises on every `$`, accepts a sentence only when it ends
/// in `*hh` and the checksum matches, and counts everything it throws away.
///
/// Sentences that lie entirely inside one fed chunk are handed out without copying; only a
/// sentence split across two chunks is carried over in a small fixed buffer.
public struct NMEAFramer: Sendable {
    /// What the framer has seen so far. Every byte fed ends up in exactly one bucket.
    public struct Counters: Sendable, Equatable {
        /// Sentences whose checksum matched and which were handed to the caller.
        public var sentences = 0
        /// Complete-looking sentences (`*hh` present) whose checksum did not match. Dropped.
        public var badChecksums = 0
        /// Sentences cut short, without a `*hh` trailer, or with a non-printable byte inside.
        public var malformed = 0
        /// Sentences longer than ``NMEAFramer/maximumSentenceLength``. Dropped.
        public var overlong = 0
        /// Bytes outside any sentence other than line breaks (binary garbage, NULs, `!` AIS).
        public var garbageBytes = 0
        public init() {}
    }

    /// Longest sentence accepted, counting `$` and `*hh` but not the line break. The
    /// standard says 82 with CR/LF; multi-GNSS receivers exceed it, so allow some slack.
    public static let maximumSentenceLength = 128

    public private(set) var counters = Counters()

    // A sentence whose start was seen but whose end lies in a later chunk.
    private var carry = CarryBuffer()
    private var carrying = false

    public init() {}

    /// Feeds a chunk of bytes; calls `body` once per valid sentence, in order.
    ///
    /// The ``NMEARawSentence`` passed to `body` points into the chunk or into the framer's
    /// carry buffer and is valid only during the call.
    public mutating func feed(
        _ chunk: UnsafeRawBufferPointer, _ body: (NMEARawSentence) throws -> Void
    ) rethrows {
        guard let base = chunk.baseAddress?.assumingMemoryBound(to: UInt8.self), chunk.count > 0
        else { return }
        let count = chunk.count
        var index = 0
        if carrying {
            // Continue the carried sentence until a terminator shows up.
            while index < count {
                let byte = base[index]
                if !Self.isSentenceByte(byte) { break }
                if carry.count >= Self.maximumSentenceLength {
                    counters.overlong += 1
                    carrying = false
                    carry.count = 0
                    break
                }
                carry.append(byte)
                index += 1
            }
            if carrying {
                if index == count { return }  // still incomplete
                carrying = false
                let sentenceEnd = carry.count
                let carried = carry
                try carried.withBytes { bytes in
                    try finish(bytes.baseAddress!, 0, sentenceEnd, terminator: base[index], body)
                }
                carry.count = 0
                if base[index] != UInt8(ascii: "$") { index += 1 }
            }
        }
        while index < count {
            let byte = base[index]
            if byte != UInt8(ascii: "$") {
                if byte != 0x0A && byte != 0x0D { counters.garbageBytes += 1 }
                index += 1
                continue
            }
            let start = index
            var end = index + 1
            let limit = min(count, start + Self.maximumSentenceLength)
            while end < limit && Self.isSentenceByte(base[end]) { end += 1 }
            if end == count {
                // Runs to the end of the chunk: keep it for the next feed.
                carry.count = 0
                for offset in start..<end { carry.append(base[offset]) }
                carrying = true
                return
            }
            if end == limit && Self.isSentenceByte(base[end]) {
                counters.overlong += 1
                // Skip the rest of the oversized line up to the next `$` or line break.
                index = end
                while index < count && Self.isSentenceByte(base[index]) { index += 1 }
                continue
            }
            try finish(base, start, end, terminator: base[end], body)
            index = base[end] == UInt8(ascii: "$") ? end : end + 1
        }
    }

    /// Feeds bytes from any contiguous collection.
    public mutating func feed(_ bytes: [UInt8], _ body: (NMEARawSentence) throws -> Void) rethrows {
        try bytes.withUnsafeBytes { try feed($0, body) }
    }

    /// Ends the stream: a carried sentence that never got its line break is still accepted
    /// if it is complete (files often lack a final newline).
    public mutating func finish(_ body: (NMEARawSentence) throws -> Void) rethrows {
        guard carrying else { return }
        carrying = false
        let length = carry.count
        let carried = carry
        try carried.withBytes { bytes in
            try finish(bytes.baseAddress!, 0, length, terminator: 0x0A, body)
        }
        carry.count = 0
    }

    /// `$` starts a new sentence, so it ends the current one; so do line breaks and any
    /// byte that cannot appear in NMEA text.
    @inline(__always)
    private static func isSentenceByte(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte <= 0x7E && byte != UInt8(ascii: "$")
    }

    /// Checks the `*hh` trailer of `base[start..<end]` (which begins with `$`).
    private mutating func finish(
        _ base: UnsafePointer<UInt8>, _ start: Int, _ end: Int, terminator: UInt8,
        _ body: (NMEARawSentence) throws -> Void
    ) rethrows {
        let length = end - start
        // Shortest sensible sentence: `$` + 5-letter address + `*hh`.
        guard length >= 9, base[end - 3] == UInt8(ascii: "*"),
            let high = Self.hexValue(base[end - 2]), let low = Self.hexValue(base[end - 1])
        else {
            counters.malformed += 1
            return
        }
        // A sentence ended by a non-text byte other than a line break or `$` was cut short
        // even if the bytes before it happen to look complete.
        if terminator != 0x0A && terminator != 0x0D && terminator != UInt8(ascii: "$") {
            counters.malformed += 1
            return
        }
        var checksum: UInt8 = 0
        var offset = start + 1
        while offset < end - 3 {
            checksum ^= base[offset]
            offset += 1
        }
        guard checksum == (high << 4 | low) else {
            counters.badChecksums += 1
            return
        }
        counters.sentences += 1
        try body(NMEARawSentence(
            body: UnsafeBufferPointer(start: base + start + 1, count: end - start - 4)))
    }

    @inline(__always)
    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}

/// A checksum-verified sentence as bytes: everything between `$` and `*`, for example
/// `GPRMC,083723.00,A,...`. Borrowed from the framer; valid only inside the callback.
public struct NMEARawSentence {
    /// The bytes between `$` and `*`.
    public let body: UnsafeBufferPointer<UInt8>

    /// The sentence as text, without `$` and `*hh` (allocates; for logs and tests).
    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// Fixed storage for one carried-over sentence; inline, so the framer stays a value type
/// without heap traffic.
private struct CarryBuffer: Sendable {
    private var storage: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                          UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
        = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    var count = 0

    mutating func append(_ byte: UInt8) {
        guard count < 128 else { return }
        withUnsafeMutableBytes(of: &storage) { $0[count] = byte }
        count += 1
    }

    func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try withUnsafeBytes(of: storage) { raw in
            try body(UnsafeBufferPointer(
                start: raw.baseAddress!.assumingMemoryBound(to: UInt8.self), count: count))
        }
    }
}
