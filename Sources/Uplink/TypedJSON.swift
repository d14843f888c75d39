import Basics
import Recording


/// Firestore REST's typed JSON on the shared ``JSONWriter``: values, documents' fields and,
/// without building the value tree, a `realtime_data` document's points.
extension JSONWriter {
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
        if p.backfilled { raw(#","backfilled":{"booleanValue":true}"#) }
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

}

extension SinkDocument {
    /// Plain JSON of the fields as bytes (what the directory and PostgreSQL sinks store).
    public var jsonBytes: [UInt8] {
        var out = JSONWriter(capacity: 64 * 1024)
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
