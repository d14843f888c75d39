#if canImport(Glibc)
import Glibc
#endif

/// Tells whether the system clock is synchronised (NTP, chrony, PTP), which decides the
/// session's time source.
public protocol ClockSynchronisationProbe: Sendable {
    /// True when the kernel's clock discipline says the clock is synchronised.
    func isSynchronised() -> Bool
}

/// Reads the kernel's clock discipline with `adjtimex(2)` (modes 0: read only, no privilege),
/// the same test timedated's `NTPSynchronized` makes, so it works without
/// org.freedesktop.timedate1 on the bus: synchronised unless the call reports `TIME_ERROR`,
/// `STA_UNSYNC` is set, or the maximum error reached 16 s (the kernel's "unsynchronised"
/// threshold, `NTP_PHASE_LIMIT`).
public struct KernelClockSynchronisation: ClockSynchronisationProbe {
    /// `STA_UNSYNC` from <sys/timex.h>.
    static let unsynchronisedFlag: Int32 = 0x0040
    /// `TIME_ERROR` from <sys/timex.h>.
    static let timeError: Int32 = 5
    /// `NTP_PHASE_LIMIT`: a maximum error at or above 16 s means unsynchronised (µs).
    static let maximumErrorLimit = 16_000_000

    public init() {}

    public func isSynchronised() -> Bool {
        guard let reading = Self.read() else { return false }
        return Self.judge(result: reading.result, status: reading.status, maximumError: reading.maximumError)
    }

    private typealias AdjustTime = @convention(c) (UnsafeMutableRawPointer) -> Int32

    /// Calls glibc's `adjtimex` with a zeroed `struct timex` (modes 0: read only). Glibc's
    /// Swift module does not import <sys/timex.h>, so the function is looked up by name and
    /// the three fields read at their LP64 offsets (modes u32 + pad, offset, freq, maxerror
    /// at 24, esterror, status at 40); the struct is 208 bytes, a larger buffer is passed.
    private static func read() -> (result: Int32, status: Int32, maximumError: Int)? {
        #if os(Linux) && (arch(x86_64) || arch(arm64))
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "adjtimex") else { return nil }
        let adjust = unsafeBitCast(symbol, to: AdjustTime.self)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 512, alignment: 16)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: 512)
        let result = adjust(buffer)
        let maximumError = buffer.load(fromByteOffset: 24, as: Int.self)
        let status = buffer.load(fromByteOffset: 40, as: Int32.self)
        return (result, status, maximumError)
        #else
        return nil
        #endif
    }

    /// The decision on one adjtimex reading (pure, for tests).
    static func judge(result: Int32, status: Int32, maximumError: Int) -> Bool {
        guard result >= 0, result != timeError else { return false }
        guard status & unsynchronisedFlag == 0 else { return false }
        return maximumError < maximumErrorLimit
    }
}

/// A fixed answer (tests, or a configuration that declares the clock's state).
public struct FixedClockSynchronisation: ClockSynchronisationProbe {
    public let synchronised: Bool
    public init(_ synchronised: Bool) { self.synchronised = synchronised }
    public func isSynchronised() -> Bool { synchronised }
}
