import Basics

/// Plain JSON (not Firestore's typed encoding) on the shared ``JSONWriter``: what the
/// PostgreSQL and directory sinks store, what export writes and what the JSON Schemas
/// describe. Numbers are the shortest text that reads back to the value (integral doubles
/// keep a `.0`); non-finite numbers, which JSON cannot hold, are `null`.
extension JSONWriter {
    /// Plain JSON, byte for byte what `FirestoreValue.jsonText` produces (shortest round-trip
    /// numbers, integral doubles keep a ".0", non-finite numbers become null).
    public mutating func plain(_ value: FirestoreValue) {
        switch value {
        case .null: raw("null")
        case let .bool(b): b ? raw("true") : raw("false")
        case let .integer(i): number(i)
        case let .double(d): numberOrNull(d)
        case let .float(f): numberOrNull(f)
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

    /// `plain(.array(points.map(RealtimeDataDocument.value)))`, without the tree.
    public mutating func plainPoints(_ points: [RecordedPoint]) {
        raw("[")
        for (i, p) in points.enumerated() {
            if i > 0 { raw(",") }
            plainPoint(p)
        }
        raw("]")
    }

    /// `plain(RealtimeDataDocument.value(p))`, without the tree; with `board`, the board's
    /// address as the first field (export's points).
    public mutating func plainPoint(_ p: RecordedPoint, board: String? = nil) {
        if let board {
            raw(#"{"board":"#)
            string(board)
            raw(#","gyroscope":"#)
        } else {
            raw(#"{"gyroscope":"#)
        }
        plainReading(p.gyroscope.x, p.gyroscope.y, p.gyroscope.z, p.gyroscope.timestamp)
        if let l = p.location {
            raw(#","location":{"latitude":"#)
            numberOrNull(l.latitude)
            raw(#","longitude":"#)
            numberOrNull(l.longitude)
            raw(#","timestamp":"#)
            number(Int64(l.timestamp.rounded()))
            raw(#","accuracy":"#)
            if let a = l.accuracy { numberOrNull(a) } else { raw("null") }
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
        if p.backfilled { raw(#","backfilled":true"#) }
        raw("}")
    }

    @inline(__always) mutating func plainReading(_ x: Float, _ y: Float, _ z: Float, _ timestamp: Double) {
        raw(#"{"x":"#)
        numberOrNull(x)
        raw(#","y":"#)
        numberOrNull(y)
        raw(#","z":"#)
        numberOrNull(z)
        raw(#","timestamp":"#)
        number(Int64(timestamp.rounded()))
        raw("}")
    }
}
