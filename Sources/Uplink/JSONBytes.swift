import Basics
import Recording


/// Appends JSON to a byte array: the hot path of every upload (a 2,000-point chunk is about
/// 700 kB of typed JSON and 12,000 doubles), so no intermediate Strings.
struct JSONBytes: TextOutputStream {
    var bytes: [UInt8] = []

    init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    @inline(__always) mutating func raw(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Decimal digits written straight into the buffer (what `String(i)` gives).
    mutating func number(_ i: Int64) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: sign + 20 digits fit
        withUnsafeMutableBytes(of: &digits) { buffer in
            var v = i.magnitude
            var at = buffer.count
            repeat {
                at -= 1
                buffer[at] = 0x30 + UInt8(truncatingIfNeeded: v % 10)
                v /= 10
            } while v != 0
            if i < 0 {
                at -= 1
                buffer[at] = 0x2D
            }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[at...]))
        }
    }

    /// Shortest round-trip form (``ShortestDecimal``), finite values only. Written through
    /// `TextOutputStream`: Double formats into a stack buffer and hands it to
    /// ``_writeASCII(_:)``, where `description` would build a String, which for the usual
    /// 16 to 18 characters of a sensor reading means a heap allocation. Half the CPU of
    /// encoding a chunk's points went to formatting doubles; this halves that.
    @inline(__always) mutating func number<Value: BinaryFloatingPoint & TextOutputStreamable>(_ value: Value) {
        ShortestDecimal.write(value, to: &self)
    }

    /// `TextOutputStream`.
    mutating func write(_ string: String) {
        var copy = string
        copy.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// `TextOutputStream`'s entry for ASCII text already in a buffer (what the standard
    /// library's number formatting writes).
    mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) {
        bytes.append(contentsOf: buffer)
    }

    /// A JSON string literal (``JSONString``).
    @inline(__always) mutating func string(_ s: String) { JSONString.append(s, to: &bytes) }

    /// Firestore's typed encoding of `value`.
    mutating func typed(_ value: FirestoreValue) {
        switch value {
        case .null: raw(#"{"nullValue":null}"#)
        case let .bool(b): b ? raw(#"{"booleanValue":true}"#) : raw(#"{"booleanValue":false}"#)
        case let .integer(i):
            raw(#"{"integerValue":""#)
            number(i)
            raw(#""}"#)
        case let .double(d):
            raw(#"{"doubleValue":"#)
            if d.isNaN { raw(#""NaN""#) } else if d == .infinity { raw(#""Infinity""#) } else if d == -.infinity {
                raw(#""-Infinity""#)
            } else { number(d) }
            raw("}")
        case let .float(f): typedFloat(f)
        case let .string(s):
            raw(#"{"stringValue":"#)
            string(s)
            raw("}")
        case let .array(a):
            raw(#"{"arrayValue":{"values":["#)
            for (i, v) in a.enumerated() {
                if i > 0 { raw(",") }
                typed(v)
            }
            raw("]}}")
        case let .map(m):
            raw(#"{"mapValue":{"fields":"#)
            typedFields(m)
            raw("}}")
        }
    }

    /// A typed double (`typed(.double(d))`).
    @inline(__always) mutating func typedDouble(_ d: Double) { typedNumber(d) }

    /// A typed float32 (`typed(.float(f))`): Firestore's double, with the float's digits.
    @inline(__always) mutating func typedFloat(_ f: Float) { typedNumber(f) }

    /// Firestore's double of a finite value at its own precision; non-finite ones as
    /// `typed(.double(_:))` spells them.
    @inline(__always) mutating func typedNumber<Value: BinaryFloatingPoint & TextOutputStreamable>(_ value: Value) {
        if value.isFinite {
            raw(#"{"doubleValue":"#)
            ShortestDecimal.write(value, to: &self)
            raw("}")
        } else {
            typed(.double(Double(value)))
        }
    }

    /// A typed integer (`typed(.integer(i))`).
    @inline(__always) mutating func typedInteger(_ i: Int64) {
        raw(#"{"integerValue":""#)
        number(i)
        raw(#""}"#)
    }

    /// A plain double, as `plain(.double(d))` writes it.
    @inline(__always) mutating func plainDouble(_ d: Double) {
        if d.isFinite { number(d) } else { raw("null") }
    }

    /// A plain float32, as `plain(.float(f))` writes it.
    @inline(__always) mutating func plainFloat(_ f: Float) {
        if f.isFinite { number(f) } else { raw("null") }
    }

    /// The typed `fields` of a `realtime_data` document, byte for byte
    /// `typedFields(document.fields)`, written from the points without building the
    /// FirestoreValue tree (three small arrays and a dozen enum boxes per point).
    mutating func typedRealtimeFields(_ document: RealtimeDataDocument) {
        raw(#"{"data":{"arrayValue":{"values":["#)
        for (i, p) in document.points.enumerated() {
            if i > 0 { raw(",") }
            typedPoint(p)
        }
        raw(#"]}},"session_id":"#)
        typed(.string(document.sessionID))
        raw(#","board":"#)
        typed(.string(document.board))
        raw(#","seq":"#)
        typedInteger(Int64(document.seq))
        raw(#","schema_version":"#)
        typedInteger(RealtimeDataDocument.schemaVersion)
        raw("}")
    }

    /// `typed(RealtimeDataDocument.value(p))`, without the tree.
    mutating func typedPoint(_ p: RecordedPoint) {
        raw(#"{"mapValue":{"fields":{"gyroscope":"#)
        typedReading(p.gyroscope.x, p.gyroscope.y, p.gyroscope.z, p.gyroscope.timestamp)
        if let l = p.location {
            raw(#","location":{"mapValue":{"fields":{"latitude":"#)
            typedDouble(l.latitude)
            raw(#","longitude":"#)
            typedDouble(l.longitude)
            raw(#","timestamp":"#)
            typedInteger(Int64(l.timestamp.rounded()))
            raw(#","accuracy":"#)
            if let a = l.accuracy { typedFloat(a) } else { raw(#"{"nullValue":null}"#) }
            raw(#","age_ms":"#)
            typedInteger(Int64(l.age.rounded()))
            if l.deadReckoned { raw(#","dead_reckoned":{"booleanValue":true}"#) }
            raw("}}}")
        } else {
            raw(#","location":{"nullValue":null},"location_missing":"#)
            typed(.string((p.missingLocation ?? .noFix).name))
        }
        if let a = p.accelerometer {
            raw(#","accelerometer":"#)
            typedReading(a.x, a.y, a.z, a.timestamp)
        }
        if p.missedBefore > 0 {
            raw(#","missed_before":"#)
            typedInteger(Int64(p.missedBefore))
        }
        if p.gapMilliseconds > 0 {
            raw(#","gap_ms":"#)
            typedInteger(Int64(p.gapMilliseconds))
        }
        raw("}}}")
    }

    @inline(__always) mutating func typedReading(_ x: Float, _ y: Float, _ z: Float, _ timestamp: Double) {
        raw(#"{"mapValue":{"fields":{"x":"#)
        typedFloat(x)
        raw(#","y":"#)
        typedFloat(y)
        raw(#","z":"#)
        typedFloat(z)
        raw(#","timestamp":"#)
        typedInteger(Int64(timestamp.rounded()))
        raw("}}}")
    }

    /// `plain(.array(points.map(RealtimeDataDocument.value)))`, without the tree.
    mutating func plainPoints(_ points: [RecordedPoint]) {
        raw("[")
        for (i, p) in points.enumerated() {
            if i > 0 { raw(",") }
            plainPoint(p)
        }
        raw("]")
    }

    /// `plain(RealtimeDataDocument.value(p))`, without the tree.
    mutating func plainPoint(_ p: RecordedPoint) {
        raw(#"{"gyroscope":"#)
        plainReading(p.gyroscope.x, p.gyroscope.y, p.gyroscope.z, p.gyroscope.timestamp)
        if let l = p.location {
            raw(#","location":{"latitude":"#)
            plainDouble(l.latitude)
            raw(#","longitude":"#)
            plainDouble(l.longitude)
            raw(#","timestamp":"#)
            number(Int64(l.timestamp.rounded()))
            raw(#","accuracy":"#)
            if let a = l.accuracy { plainFloat(a) } else { raw("null") }
            raw(#","age_ms":"#)
            number(Int64(l.age.rounded()))
            if l.deadReckoned { raw(#","dead_reckoned":true"#) }
            raw("}")
        } else {
            raw(#","location":null,"location_missing":"#)
            string((p.missingLocation ?? .noFix).name)
        }
        if let a = p.accelerometer {
            raw(#","accelerometer":"#)
            plainReading(a.x, a.y, a.z, a.timestamp)
        }
        if p.missedBefore > 0 {
            raw(#","missed_before":"#)
            number(Int64(p.missedBefore))
        }
        if p.gapMilliseconds > 0 {
            raw(#","gap_ms":"#)
            number(Int64(p.gapMilliseconds))
        }
        raw("}")
    }

    @inline(__always) mutating func plainReading(_ x: Float, _ y: Float, _ z: Float, _ timestamp: Double) {
        raw(#"{"x":"#)
        plainFloat(x)
        raw(#","y":"#)
        plainFloat(y)
        raw(#","z":"#)
        plainFloat(z)
        raw(#","timestamp":"#)
        number(Int64(timestamp.rounded()))
        raw("}")
    }

    /// `{"name": typed value, ...}`.
    mutating func typedFields(_ fields: [(String, FirestoreValue)]) {
        raw("{")
        for (i, (k, v)) in fields.enumerated() {
            if i > 0 { raw(",") }
            string(k)
            raw(":")
            typed(v)
        }
        raw("}")
    }

    /// Plain JSON, byte for byte what `FirestoreValue.jsonText` produces (shortest round-trip
    /// numbers, integral doubles keep a ".0", non-finite numbers become null).
    mutating func plain(_ value: FirestoreValue) {
        switch value {
        case .null: raw("null")
        case let .bool(b): b ? raw("true") : raw("false")
        case let .integer(i): number(i)
        case let .double(d): plainDouble(d)
        case let .float(f): plainFloat(f)
        case let .string(s): string(s)
        case let .array(a):
            raw("[")
            for (i, v) in a.enumerated() {
                if i > 0 { raw(",") }
                plain(v)
            }
            raw("]")
        case let .map(m):
            raw("{")
            for (i, (k, v)) in m.enumerated() {
                if i > 0 { raw(",") }
                string(k)
                raw(":")
                plain(v)
            }
            raw("}")
        }
    }
}

extension SinkDocument {
    /// Plain JSON of the fields as bytes (what the directory and PostgreSQL sinks store).
    public var jsonBytes: [UInt8] {
        var out = JSONBytes(capacity: 64 * 1024)
        switch self {
        case let .realtimeData(d):
            out.raw(#"{"data":"#)
            out.plainPoints(d.points)
            out.raw(#","session_id":"#)
            out.string(d.sessionID)
            out.raw(#","board":"#)
            out.string(d.board)
            out.raw(#","seq":"#)
            out.number(Int64(d.seq))
            out.raw(#","schema_version":"#)
            out.number(RealtimeDataDocument.schemaVersion)
            out.raw("}")
        case .records:
            out.plain(.map(fields))
        }
        return out.bytes
    }
}

extension FirestoreValue {
    /// Plain JSON text via the byte writer (equal to `jsonText`, faster).
    var fastJSONText: String {
        var out = JSONBytes(capacity: 1024)
        out.plain(self)
        return String(decoding: out.bytes, as: UTF8.self)
    }
}
