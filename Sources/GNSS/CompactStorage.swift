// Property wrappers that store optional sentence fields without the padding of Swift
// optionals (a `Double?` takes 16 bytes in a struct, these take 8 or 4). Sentences are
// copied by value on the hot path, so their size is most of the parser's cost.

/// A `Double?` stored as a `Double`, with NaN meaning nil (the parser never produces NaN).
@propertyWrapper
public struct CompactDouble: Sendable {
    @usableFromInline var storage: Double

    @inlinable public init(wrappedValue: Double?) { storage = wrappedValue ?? .nan }

    @inlinable public var wrappedValue: Double? {
        get { storage.isNaN ? nil : storage }
        set { storage = newValue ?? .nan }
    }
}

/// An `Int?` stored as an `Int32`, with `Int32.min` meaning nil. Values outside the
/// `Int32` range are clamped (no NMEA field gets near it).
@propertyWrapper
public struct CompactInt: Sendable {
    @usableFromInline var storage: Int32

    @inlinable public init(wrappedValue: Int?) {
        storage = wrappedValue.map { Int32(clamping: $0) } ?? .min
        if storage == .min && wrappedValue != nil { storage = .min + 1 }
    }

    @inlinable public var wrappedValue: Int? {
        get { storage == .min ? nil : Int(storage) }
        set { self = CompactInt(wrappedValue: newValue) }
    }
}

/// An `NMEATimeOfDay?` stored as its microseconds, with -1 meaning nil.
@propertyWrapper
public struct CompactTime: Sendable {
    @usableFromInline var storage: Int64

    @inlinable public init(wrappedValue: NMEATimeOfDay?) { storage = wrappedValue?.microseconds ?? -1 }

    @inlinable public var wrappedValue: NMEATimeOfDay? {
        get { storage < 0 ? nil : NMEATimeOfDay(microseconds: storage) }
        set { storage = newValue?.microseconds ?? -1 }
    }
}

/// An `NMEADate?` packed into 32 bits (year 16, month 8, day 8), with 0 meaning nil.
@propertyWrapper
public struct CompactDate: Sendable {
    @usableFromInline var storage: UInt32

    @inlinable public init(wrappedValue: NMEADate?) {
        guard let date = wrappedValue, (0...65535).contains(date.year), (0...255).contains(date.month),
            (1...255).contains(date.day)
        else {
            storage = 0
            return
        }
        storage = UInt32(date.year) << 16 | UInt32(date.month) << 8 | UInt32(date.day)
    }

    @inlinable public var wrappedValue: NMEADate? {
        get {
            storage == 0 ? nil
                : NMEADate(year: Int(storage >> 16), month: Int(storage >> 8 & 0xFF), day: Int(storage & 0xFF))
        }
        set { self = CompactDate(wrappedValue: newValue) }
    }
}
