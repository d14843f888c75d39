import MetaWear

/// Notification decode throughput: single-sample and packed gyro notifications through
/// `NotificationDecoder`, the per-notification hot path of every connected board.
enum MetaWearBenchmark {
    /// Samples per second the decoder must sustain on one core. A board streams at most a few
    /// hundred samples/s, so this leaves room for many boards on a Raspberry Pi.
    static let goalSamplesPerSecond = 1_000_000.0

    static func run(_ arguments: [String]) {
        var notifications = 20_000_000
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            if argument == "--notifications", let value = iterator.next().flatMap(Int.init), value > 0 {
                notifications = value
            } else {
                fail("usage: mwbench metawear [--notifications N]")
            }
        }
        let decoder = NotificationDecoder(chip: .bmi160, gyroRange: .dps1000)
        let single = makeNotifications(register: 0x05, samples: 1)
        let packed = makeNotifications(register: 0x07, samples: 3)
        // Warm up caches and branch predictors.
        _ = measure(decoder, single, count: notifications / 10)
        _ = measure(decoder, packed, count: notifications / 10)
        let singleResult = measure(decoder, single, count: notifications)
        let packedResult = measure(decoder, packed, count: notifications)

        print("| case | notifications | samples | seconds | samples/s | ns/sample |")
        print("|---|---:|---:|---:|---:|---:|")
        for (name, result) in [("single gyro (8 B)", singleResult), ("packed gyro (20 B, 3 samples)", packedResult)] {
            print("| \(name) | \(result.notifications) | \(result.samples) | \(format(result.seconds, 3)) | \(format(result.samplesPerSecond, 0)) | \(format(result.nanosecondsPerSample, 1)) |")
        }
        print("single_samples_per_s=\(format(singleResult.samplesPerSecond, 0))")
        print("single_ns_per_sample=\(format(singleResult.nanosecondsPerSample, 2))")
        print("packed_samples_per_s=\(format(packedResult.samplesPerSecond, 0))")
        print("packed_ns_per_sample=\(format(packedResult.nanosecondsPerSample, 2))")
        print("goal_samples_per_s=\(format(goalSamplesPerSecond, 0))")
        print("checksum=\(format(singleResult.checksum + packedResult.checksum, 3))")
    }

    struct Result {
        var notifications: Int
        var samples: Int
        var seconds: Double
        var checksum: Double
        var samplesPerSecond: Double { Double(samples) / seconds }
        var nanosecondsPerSample: Double { seconds * 1e9 / Double(samples) }
    }

    /// 1024 distinct notifications with varying signed values, so nothing is constant-folded.
    static func makeNotifications(register: UInt8, samples: Int) -> [[UInt8]] {
        var state: UInt32 = 0x1234_5678
        return (0..<1024).map { _ in
            var bytes: [UInt8] = [0x13, register]
            for _ in 0..<(samples * 6) {
                state = state &* 1_664_525 &+ 1_013_904_223
                bytes.append(UInt8(truncatingIfNeeded: state >> 24))
            }
            return bytes
        }
    }

    static func measure(_ decoder: NotificationDecoder, _ inputs: [[UInt8]], count: Int) -> Result {
        let clock = ContinuousClock()
        var checksum = 0.0
        var samples = 0
        let start = clock.now
        for i in 0..<count {
            if case .gyro(let decoded) = decoder.decode(inputs[i & 1023]) {
                for sample in decoded { checksum += sample.x + sample.y - sample.z }
                samples += decoded.count
            }
        }
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        return Result(notifications: count, samples: samples, seconds: max(seconds, 1e-9), checksum: checksum)
    }

    static func format(_ value: Double, _ decimals: Int) -> String {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        if decimals == 0 { return String(Int(rounded)) }
        return String(rounded)
    }
}
