import Testing
@testable import Recording

/// How gyro notifications reached the gateway through the real-BlueZ VM (bluetoothd 5.66,
/// btvirt, TCG; `make test-bluez BLUEZ_GROUPS=session` with MWGATE_VM_BTMON=1, board 1 at
/// 100 Hz, its HCI trace's first 632 samples): in bursts of 2-49 samples, 0.02-0.5 s apart,
/// whose delay wanders between 0 and about 0.8 s for seconds at a time. The board sent every
/// sample. Each burst is (its first sample, when it arrived in ms from the first burst, how
/// many samples); a burst's samples come 20 µs apart.
struct BurstyStackArrivals {
    static let measured: [(first: Int, milliseconds: Double, count: Int)] = [
        (0, 0.0, 11), (11, 218.4, 4), (15, 271.8, 2), (17, 292.4, 23), (40, 640.6, 3), (43, 779.0, 11),
        (54, 794.6, 15), (69, 859.1, 21), (90, 1122.9, 3), (93, 1178.5, 3), (96, 1194.6, 10), (106, 1300.2, 36),
        (142, 1736.5, 45), (187, 1979.9, 3), (190, 2056.1, 27), (217, 2183.6, 3), (220, 2204.0, 14), (234, 2336.0, 2),
        (236, 2571.7, 33), (269, 2758.4, 3), (272, 2876.5, 18), (290, 3232.8, 2), (292, 3343.6, 2), (294, 3359.3, 3),
        (297, 3448.1, 43), (340, 3918.6, 21), (361, 4151.2, 41), (402, 4486.8, 23), (425, 4503.9, 36), (461, 5002.5, 10),
        (471, 5076.8, 37), (508, 5423.3, 9), (517, 5843.8, 37), (554, 6373.1, 27), (581, 6575.4, 2), (583, 6674.9, 49),
    ]
    static let samplesPerRound = 632

    /// The measured pattern `rounds` times in a row (each round 6.32 s of samples; a burst
    /// never arrives before the one before it), without the samples in `holes`.
    static func generate(rounds: Int, holes: Set<Int> = []) -> [RealStackArrivals.Arrival] {
        var out: [RealStackArrivals.Arrival] = []
        var last: Int64 = 0
        for round in 0..<rounds {
            for burst in measured {
                for k in 0..<burst.count {
                    let start = 3_000_000_000 + Int64(round) * 6_320_000_000 + Int64(burst.milliseconds * 1e6)
                    last = max(start, last) + 20_000
                    let index = round * samplesPerRound + burst.first + k
                    if !holes.contains(index) { out.append(.init(sampleIndex: index, receivedAt: last)) }
                }
            }
        }
        return out
    }
}

/// Issue 18 defect 6 on the real stack: a delay that lasts a second or two is not a loss.
@Suite("Gaps: the real stack's bursts are no loss")
struct BurstyStackGapTests {
    @Test("63 s of the VM's measured bursts: no mark (before: a false mark every 3-6 s, 6 to 18 samples)")
    func measuredBurstsMakeNoMark() {
        let found = GapJitterTests().marks(BurstyStackArrivals.generate(rounds: 10))
        #expect(found.isEmpty, "false marks \(found)")
    }

    @Test("a real 1-sample loss in the measured bursts is still found, with its count")
    func oneLostSampleIsFound() {
        let found = GapJitterTests().marks(BurstyStackArrivals.generate(rounds: 10, holes: [3000]))
        #expect(found.count == 1 && found.first?.missed == 1, "marks \(found)")
        // Where the delay was already high before the hole, the samples before it cannot be
        // told from late ones: the mark may come up to that stretch earlier (1.3 s here),
        // never later.
        #expect(found.first.map { (2850...3001).contains($0.index) } == true, "marks \(found)")
    }
}
