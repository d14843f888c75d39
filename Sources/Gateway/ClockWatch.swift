/// Whether the system clock is synchronised, as the pipeline last read it: the kernel's clock
/// discipline is asked at most once per interval (on ticks and status requests alike).
struct ClockWatch {
    private let probe: any ClockSynchronisationProbe
    private var check = ThrottledCheck()
    /// The last reading.
    private(set) var isSynchronised: Bool

    /// A watch holding the probe's reading now.
    init(probe: any ClockSynchronisationProbe) {
        self.probe = probe
        isSynchronised = probe.isSynchronised()
    }

    /// Reads the probe again when `interval` nanoseconds have passed since the last reading at
    /// monotonic `now`; nil when not due, else the reading and whether it changed.
    mutating func reading(now: Int64, interval: Int64) -> (synchronised: Bool, changed: Bool)? {
        guard check.isDue(now: now, interval: interval) else { return nil }
        let synchronised = probe.isSynchronised()
        defer { isSynchronised = synchronised }
        return (synchronised, synchronised != isSynchronised)
    }
}
