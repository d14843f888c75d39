/// Writes JSON as UTF-8 bytes: the one place numbers and strings become JSON text for the
/// sinks, export and Firestore's typed encoding (numbers through ``ShortestDecimal``, strings
/// through ``JSONString``). A 2,000-point chunk is about 700 kB of typed JSON and 12,000
/// numbers, so nothing here builds an intermediate String.
public struct JSONWriter: TextOutputStream {
    /// The UTF-8 written so far.
    public var bytes: [UInt8] = []

    /// An empty writer with room for `capacity` bytes.
    public init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    /// Literal JSON text (punctuation, keys written with their quotes).
    @inlinable @inline(__always) public mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Decimal digits written straight into the buffer (what `String(i)` gives).
    @inlinable public mutating func number(_ i: Int64) {
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

    /// Shortest round-trip form of a finite value (``ShortestDecimal``). Written through
    /// `TextOutputStream`: the standard library formats into a stack buffer and hands it to
    /// ``_writeASCII(_:)``, where `description` would allocate a String for each of the
    /// 16 to 18 characters of a sensor reading (half the CPU of encoding a chunk's points).
    @inlinable @inline(__always) public mutating func number<Value: BinaryFloatingPoint & TextOutputStreamable>(_ value: Value) {
        ShortestDecimal.write(value, to: &self)
    }

    /// A JSON number, or `null` for NaN and infinities, which JSON cannot hold.
    @inlinable @inline(__always) public mutating func numberOrNull<Value: BinaryFloatingPoint & TextOutputStreamable>(_ value: Value) {
        if value.isFinite { number(value) } else { raw("null") }
    }

    /// A JSON string literal (``JSONString``).
    @inlinable @inline(__always) public mutating func string(_ text: String) { JSONString.append(text, to: &bytes) }

    /// `TextOutputStream`.
    public mutating func write(_ string: String) {
        var copy = string
        copy.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// `TextOutputStream`'s entry for ASCII text already in a buffer (what the standard
    /// library's number formatting writes).
    public mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) {
        bytes.append(contentsOf: buffer)
    }

    /// The bytes as text.
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}
