import Foundation

/// CPU time of this process, or of another one (dbus-daemon, mwsim), over a benchmark window.
enum ProcessCPU {
    /// User + system seconds of this process, all its threads (getrusage).
    static func ownSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// Seconds on a CPU, summed over the process's threads from
    /// `/proc/PID/task/TID/schedstat` (nanoseconds). `/proc/PID/stat` counts the same time
    /// in 10 ms clock ticks, a step of 3 to 10 % of the 0.1 to 0.3 s dbus-daemon spends in a
    /// window, which is larger than the differences being measured; it is the fallback on
    /// kernels without schedstat. nil when the process cannot be read.
    static func seconds(_ pid: Int32) -> Double? {
        if let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") {
            var nanoseconds: UInt64 = 0
            var read = 0
            for task in tasks {
                guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8),
                      let first = text.split(separator: " ").first, let value = UInt64(first)
                else { continue }
                nanoseconds += value
                read += 1
            }
            if read > 0 { return Double(nanoseconds) / 1e9 }
        }
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")")
        else { return nil }
        // After "(comm)": state is field 3, so utime (14) and stime (15) are indexes 11 and 12.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
