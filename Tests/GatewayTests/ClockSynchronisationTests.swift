import Testing
@testable import Gateway

struct ClockSynchronisationTests {
    @Test(arguments: [
        (Int32(0), Int32(0x2001), 500_000, true),      // TIME_OK, PLL + nano, small error
        (Int32(5), Int32(0x2001), 500_000, false),     // TIME_ERROR
        (Int32(0), Int32(0x0041), 500_000, false),     // STA_UNSYNC set
        (Int32(0), Int32(0x2001), 16_000_000, false),  // maximum error at the 16 s limit
        (Int32(-1), Int32(0), 0, false),               // the call failed
    ])
    func judgesAdjtimexReadings(result: Int32, status: Int32, maximumError: Int, expected: Bool) {
        #expect(KernelClockSynchronisation.judge(result: result, status: status, maximumError: maximumError) == expected)
    }

    @Test func readsTheKernelWithoutPrivilege() {
        // The answer depends on the host; the call must work and be stable.
        let probe = KernelClockSynchronisation()
        #expect(probe.isSynchronised() == probe.isSynchronised())
    }
}
