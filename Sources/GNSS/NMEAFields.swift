/// One comma-separated field of a sentence, as a borrowed byte range. Converting it never
/// allocates: numbers are parsed by hand from the digits.
public struct NMEAField {
    @usableFromInline let start: UnsafePointer<UInt8>?
    @usableFromInline let count: Int

    @inlinable init(start: UnsafePointer<UInt8>?, count: Int) {
        self.start = start
        self.count = count
    }

    /// An absent field: past the end of the sentence.
    @inlinable static var absent: NMEAField { NMEAField(start: nil, count: 0) }

    /// True when the field is empty (`,,`) or past the end of the sentence.
    @inlinable public var isEmpty: Bool { count == 0 }

    @inlinable subscript(offset: Int) -> UInt8 { start![offset] }

    /// The field's only character, or nil when it is empty or longer than one byte.
    @inlinable public var character: UInt8? {
        count == 1 ? start![0] : nil
    }

    /// The field as text (allocates; only for free-text fields such as TXT).
    public var text: String {
        guard let start else { return "" }
        return String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
    }

    /// A non-negative decimal integer.
    @inlinable public var integer: Int? {
        guard count > 0, count <= 18 else { return nil }
        var value = 0
        for offset in 0..<count {
            let digit = Int(self[offset]) &- 48
            guard digit >= 0 && digit <= 9 else { return nil }
            value = value &* 10 &+ digit
        }
        return value
    }

    /// A decimal number with optional sign and fraction, such as `-4.0` or `0.211`.
    @inlinable public var decimal: Double? {
        guard let (mantissa, scale) = scaledDecimal() else { return nil }
        return Double(mantissa) / NMEAField.powerOfTen(scale)
    }

    /// A decimal for a quantity that cannot be negative (a DOP, a speed, a standard
    /// deviation): a negative value is corrupt input and reads as absent, so it cannot turn
    /// into a negative accuracy downstream.
    @inlinable public var nonNegativeDecimal: Double? {
        guard let value = decimal, value >= 0 else { return nil }
        return value
    }

    /// 10^exponent, exact for the exponents used here (at most 18).
    @inlinable @inline(__always) static func powerOfTen(_ exponent: Int) -> Double {
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
    }

    /// The digits as an integer mantissa and the number of digits after the point.
    @inlinable func scaledDecimal() -> (Int64, Int)? {
        guard count > 0, let start else { return nil }
        var offset = 0
        var negative = false
        if start[0] == UInt8(ascii: "-") || start[0] == UInt8(ascii: "+") {
            negative = start[0] == UInt8(ascii: "-")
            offset = 1
        }
        var mantissa: Int64 = 0
        var digits = 0
        var scale = 0
        var seenPoint = false
        while offset < count {
            let byte = start[offset]
            if byte == UInt8(ascii: ".") {
                guard !seenPoint else { return nil }
                seenPoint = true
            } else {
                let digit = Int64(byte) &- 48
                guard digit >= 0 && digit <= 9 else { return nil }
                digits += 1
                guard digits <= 18 else { return nil }
                mantissa = mantissa &* 10 &+ digit
                if seenPoint { scale += 1 }
            }
            offset += 1
        }
        guard digits > 0 else { return nil }
        return (negative ? -mantissa : mantissa, scale)
    }

    /// A `ddmm.mmmm` or `dddmm.mmmm` angle combined with its hemisphere field, in signed
    /// degrees. Integer arithmetic keeps every digit the receiver sent.
    @inlinable public func coordinate(hemisphere: NMEAField, isLatitude: Bool) -> Double? {
        guard let (mantissa, scale) = scaledDecimal(), mantissa >= 0 else { return nil }
        let unit = Int64(NMEAField.powerOfTen(scale))
        let wholeMinutesAndDegrees = mantissa / unit  // dddmm
        let degrees = wholeMinutesAndDegrees / 100
        let minutesScaled = mantissa - degrees * 100 * unit
        guard minutesScaled < 60 * unit, degrees <= (isLatitude ? 90 : 180) else { return nil }
        let value = Double(degrees) + Double(minutesScaled) / (60 * NMEAField.powerOfTen(scale))
        switch hemisphere.character {
        case UInt8(ascii: "N") where isLatitude, UInt8(ascii: "E") where !isLatitude:
            return value
        case UInt8(ascii: "S") where isLatitude, UInt8(ascii: "W") where !isLatitude:
            return -value
        default:
            return nil
        }
    }

    /// `hhmmss` with optional fraction, as microseconds since UTC midnight. Accepts second
    /// 60 (leap second).
    @inlinable public var timeOfDay: NMEATimeOfDay? {
        guard count >= 6, let start else { return nil }
        var fields = (0, 0, 0)
        for pair in 0..<3 {
            let tens = Int(start[pair * 2]) &- 48
            let ones = Int(start[pair * 2 + 1]) &- 48
            guard tens >= 0, tens <= 9, ones >= 0, ones <= 9 else { return nil }
            switch pair {
            case 0: fields.0 = tens * 10 + ones
            case 1: fields.1 = tens * 10 + ones
            default: fields.2 = tens * 10 + ones
            }
        }
        guard fields.0 < 24, fields.1 < 60, fields.2 <= 60 else { return nil }
        var micros = 0
        if count > 6 {
            guard start[6] == UInt8(ascii: ".") else { return nil }
            var scale = 100_000
            for offset in 7..<count {
                let digit = Int(start[offset]) &- 48
                guard digit >= 0 && digit <= 9 else { return nil }
                micros += digit * scale
                scale /= 10
            }
        }
        return NMEATimeOfDay(
            microseconds: Int64(((fields.0 * 60 + fields.1) * 60 + fields.2) * 1_000_000 + micros))
    }

    /// Two decimal digits at `offset`, or nil.
    @inlinable func twoDigits(at offset: Int) -> Int? {
        let tens = Int(self[offset]) &- 48
        let ones = Int(self[offset + 1]) &- 48
        guard tens >= 0, tens <= 9, ones >= 0, ones <= 9 else { return nil }
        return tens * 10 + ones
    }
}

/// Walks the comma-separated fields of a sentence body from left to right.
public struct NMEAFieldCursor {
    @usableFromInline let bytes: UnsafeBufferPointer<UInt8>
    @usableFromInline var position: Int

    /// Starts at the first field; the address field (`GPRMC`) is field 0.
    @inlinable public init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        self.position = 0
    }

    /// The next field, or an empty one once the sentence has run out (trailing fields
    /// are optional across NMEA versions).
    @inlinable public mutating func next() -> NMEAField {
        guard let base = bytes.baseAddress, position <= bytes.count else { return .absent }
        let start = position
        var end = start
        while end < bytes.count && base[end] != UInt8(ascii: ",") { end += 1 }
        position = end + 1
        return NMEAField(start: base + start, count: end - start)
    }

    /// Skips `count` fields.
    @inlinable public mutating func skip(_ count: Int) {
        for _ in 0..<count { _ = next() }
    }

    /// True when at least one more field follows.
    @inlinable public var hasMore: Bool { position <= bytes.count }
}
