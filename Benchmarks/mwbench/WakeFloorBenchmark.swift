import Foundation

/// The least CPU a thread spends to be woken for one small message and read it: a reader
/// blocked in `poll` on a Unix socket, fed one byte at a time at a steady rate by
/// another thread, with nothing else to do. Any receiver that stamps each notification as it
/// arrives (our StartNotify path, bleak, dbus-daemon routing each signal) pays at least this
/// per notification, so it bounds what reading D-Bus signals one at a time can cost on this
/// machine. Only the reader thread's CPU clock is counted.
enum WakeFloorBenchmark {
    static func run(_ arguments: [String]) {
        var rate = 267.0
        var seconds = 5.0
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--rate": rate = iterator.next().flatMap(Double.init) ?? 0
            case "--seconds": seconds = iterator.next().flatMap(Double.init) ?? 0
            default: fail("usage: mwbench wakefloor [--rate PER_SECOND] [--seconds N]")
            }
        }
        guard rate > 0, seconds > 0 else { fail("mwbench wakefloor: --rate and --seconds must be positive") }

        var pair: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else { fail("socketpair: errno \(errno)") }
        let (writeFD, readFD) = (pair[0], pair[1])
        let messages = Int(rate * seconds)
        let period = Int64(1e9 / rate)

        let reader = ReaderResult()
        let done = DispatchSemaphore(value: 0)
        let readerThread = Thread {
            reader.measure(fd: readFD, messages: messages)
            done.signal()
        }
        readerThread.start()
        Thread.sleep(forTimeInterval: 0.1)

        var next = timespec()
        clock_gettime(CLOCK_MONOTONIC, &next)
        var byte: UInt8 = 1
        for _ in 0..<messages {
            var nanoseconds = Int64(next.tv_nsec) + period
            next.tv_sec += Int(nanoseconds / 1_000_000_000)
            nanoseconds %= 1_000_000_000
            next.tv_nsec = Int(nanoseconds)
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nil) == EINTR {}
            guard write(writeFD, &byte, 1) == 1 else { fail("write: errno \(errno)") }
        }
        done.wait()
        close(writeFD)
        close(readFD)
        let perWake = reader.cpuSeconds * 1e6 / Double(max(reader.wakes, 1))
        print("wakefloor_rate=\(String(format: "%.0f", rate))")
        print("wakefloor_messages=\(reader.bytes)")
        print("wakefloor_wakes=\(reader.wakes)")
        print("wakefloor_us_per_wake=\(String(format: "%.2f", perWake))")
    }

    /// The reader thread's figures, written by it before it signals and read after.
    private final class ReaderResult: @unchecked Sendable {
        var wakes = 0
        var bytes = 0
        var cpuSeconds = 0.0

        func measure(fd: Int32, messages: Int) {
            var interest = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            var buffer = [UInt8](repeating: 0, count: 256)
            let start = Self.threadCPU()
            while bytes < messages {
                let ready = poll(&interest, 1, 5_000)
                if ready < 0, errno == EINTR { continue }
                guard ready > 0 else { fail("mwbench wakefloor: no message for 5 s") }
                wakes += 1
                let count = read(fd, &buffer, buffer.count)
                guard count > 0 else { fail("read: errno \(errno)") }
                bytes += count
            }
            cpuSeconds = Self.threadCPU() - start
        }

        private static func threadCPU() -> Double {
            var now = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
            return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
        }
    }
}
