import Basics
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The fuzz suite's knobs and runner.
///
/// Every case gets its own generator, seeded from the base seed, the parser's name and the
/// case's index, so one failing case replays alone:
/// `MWGATE_FUZZ_REPLAY=0x… swift test --filter FuzzTests`. Environment:
/// - `MWGATE_FUZZ_SCALE`: multiplies every suite's default input count (`make test` runs 1,
///   `make fuzz` runs 25 unless told otherwise);
/// - `MWGATE_FUZZ_SEED`: another base seed (decimal or 0x-hex);
/// - `MWGATE_FUZZ_REPLAY`: run only the case with this seed (printed with every failure).
enum Fuzz {
    static let environment = ProcessInfo.processInfo.environment
    static let scale = max(1, Int(environment["MWGATE_FUZZ_SCALE"] ?? "") ?? 1)
    static let baseSeed = environment["MWGATE_FUZZ_SEED"].flatMap(parseSeed) ?? 0x6D77_6761_7465  // "mwgate"
    static let replay = environment["MWGATE_FUZZ_REPLAY"].flatMap(parseSeed)

    static func parseSeed(_ text: String) -> UInt64? {
        text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
    }

    /// The number of inputs for a suite whose `make test` count is `base`.
    static func count(_ base: Int) -> Int { base * scale }

    /// The seed of case `index` of `parser`.
    static func caseSeed(_ parser: String, _ index: Int) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325  // FNV-1a: stable across runs, unlike Hasher
        for byte in parser.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        var mixer = SeededRandom(seed: baseSeed ^ hash &+ UInt64(index))
        return mixer.next()
    }

    /// The case seeds to run: `count` of them, or only the one being replayed.
    static func seeds(_ parser: String, count: Int) -> [UInt64] {
        if let replay { return [replay] }
        return (0..<count).map { caseSeed(parser, $0) }
    }

    static func hex(_ seed: UInt64) -> String { "0x" + String(seed, radix: 16) }

    /// Runs `count` synchronous cases of `parser` on their own thread and waits for them at
    /// most `limit`: a parser that hangs fails the test with the seed of the case in flight
    /// (the stuck thread is abandoned; the process ends with the test run), and a crash
    /// prints it from the signal handler. Returns the tally, which is also printed.
    static func run(_ parser: String, count: Int, limit: Duration = .seconds(600),
                    sourceLocation: SourceLocation = #_sourceLocation,
                    _ body: @escaping @Sendable (inout FuzzCase) -> Void) async -> FuzzTally {
        CrashReporter.install()
        let seeds = seeds(parser, count: count)
        let progress = FuzzProgress(parser: parser)
        let finished: FuzzTally? = await withCheckedContinuation { continuation in
            let once = ResumeOnce(continuation)
            let thread = Thread {
                var tally = FuzzTally(parser: parser)
                for seed in seeds {
                    progress.set(seed)
                    var fuzzCase = FuzzCase(parser: parser, seed: seed)
                    body(&fuzzCase)
                    tally.add(fuzzCase)
                }
                progress.set(nil)
                once.resume(tally)
            }
            thread.stackSize = 8 << 20
            thread.start()
            Thread {
                let deadline = ContinuousClock.now + limit
                while ContinuousClock.now < deadline {
                    if once.done { return }
                    usleep(50_000)
                }
                once.resume(nil)
            }.start()
        }
        guard let tally = finished else {
            let seed = progress.current.map(hex) ?? "?"
            Issue.record("\(parser): no answer within \(limit) (hang) in case seed \(seed); replay: MWGATE_FUZZ_REPLAY=\(seed) swift test --filter FuzzTests",
                         sourceLocation: sourceLocation)
            return FuzzTally(parser: parser)
        }
        tally.report()
        return tally
    }
}

/// One generated input: its seed, generator and checks. Failed checks name the seed.
struct FuzzCase {
    let parser: String
    let seed: UInt64
    var rng: SeededRandom
    /// The generator kind that made this input (for the tally and failure messages).
    var kind = "?"
    /// Inputs this case fed (a stream case may feed several).
    var inputs = 1
    var failures = 0

    init(parser: String, seed: UInt64) {
        self.parser = parser
        self.seed = seed
        rng = SeededRandom(seed: seed)
    }

    /// The first failed check of this case, with where it was made.
    var firstFailure: (message: String, location: SourceLocation)?

    /// Notes a failure naming the parser, generator kind and seed when `condition` is false.
    /// Cases may run on a runner thread outside the test's task, so the issue is recorded
    /// later, by ``FuzzTally/report()`` in the test itself.
    mutating func expect(_ condition: Bool, _ message: @autoclosure () -> String,
                         sourceLocation: SourceLocation = #_sourceLocation) {
        guard !condition else { return }
        failures += 1
        // One report per case is enough to replay it.
        guard failures == 1 else { return }
        firstFailure = ("\(parser) [\(kind)] case seed \(Fuzz.hex(seed)): \(message()) — replay: MWGATE_FUZZ_REPLAY=\(Fuzz.hex(seed)) swift test --filter FuzzTests",
                        sourceLocation)
    }

    // Generator helpers.
    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }
    mutating func bool() -> Bool { Bool.random(using: &rng) }
    mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }
    mutating func byte() -> UInt8 { UInt8.random(in: 0...255, using: &rng) }
    mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in byte() } }
    mutating func pick<T>(_ items: [T]) -> T { items[int(0...items.count - 1)] }
    mutating func text(_ count: Int, from alphabet: [Character]) -> String { String((0..<count).map { _ in pick(alphabet) }) }
}

/// Inputs tried per generator kind.
struct FuzzTally: Sendable {
    let parser: String
    var inputs = 0
    var byKind: [String: Int] = [:]
    var failures = 0
    /// The first failures (message and place), recorded as issues by ``report()``.
    var failed: [(message: String, location: SourceLocation)] = []

    init(parser: String) { self.parser = parser }

    mutating func add(_ fuzzCase: FuzzCase) {
        inputs += fuzzCase.inputs
        byKind[fuzzCase.kind, default: 0] += fuzzCase.inputs
        failures += fuzzCase.failures > 0 ? 1 : 0
        if let first = fuzzCase.firstFailure, failed.count < 20 { failed.append(first) }
    }

    /// Prints the tally and records the failed cases as issues of the calling test.
    func report() {
        for failure in failed { Issue.record("\(failure.message)", sourceLocation: failure.location) }
        if failures > 0 && failed.count < failures {
            Issue.record("\(parser): \(failures - failed.count) more failing cases not shown")
        }
        let kinds = byKind.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        print("fuzz \(parser): \(inputs) inputs (\(kinds)); base seed \(Fuzz.hex(Fuzz.baseSeed)), scale \(Fuzz.scale), \(failures) failing")
    }
}

/// The seed of the case a runner thread is on.
final class FuzzProgress: @unchecked Sendable {
    let parser: String
    private let lock = NSLock()
    private var seed: UInt64?
    private let slot: Int

    init(parser: String) {
        self.parser = parser
        slot = CrashReporter.claimSlot(parser)
    }

    var current: UInt64? { lock.withLock { seed } }

    func set(_ seed: UInt64?) {
        lock.withLock { self.seed = seed }
        CrashReporter.record(slot: slot, seed: seed)
    }
}

/// Resumes a continuation once, from whichever thread gets there first.
final class ResumeOnce<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, Never>?

    init(_ continuation: CheckedContinuation<T, Never>) { self.continuation = continuation }

    var done: Bool { lock.withLock { continuation == nil } }

    func resume(_ value: T) {
        let taken: CheckedContinuation<T, Never>? = lock.withLock {
            defer { continuation = nil }
            return continuation
        }
        taken?.resume(returning: value)
    }
}

/// Prints the seeds of the cases in flight when the process dies of a trap or fault, so a
/// crash found by `make fuzz` can be replayed. Only async-signal-safe calls in the handler:
/// the text is prepared in fixed buffers before each case.
enum CrashReporter {
    static let slots = 16
    static let slotWidth = 128
    nonisolated(unsafe) static let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: slots * slotWidth)
    nonisolated(unsafe) static let lengths = UnsafeMutablePointer<Int>.allocate(capacity: slots)
    nonisolated(unsafe) static var names: [String] = []
    static let lock = NSLock()
    nonisolated(unsafe) static var installed = false

    static func claimSlot(_ parser: String) -> Int {
        lock.withLock {
            names.append(parser)
            return (names.count - 1) % slots
        }
    }

    static func record(slot: Int, seed: UInt64?) {
        let name = lock.withLock { names[slot] }
        let text = seed.map { "fuzz case in flight: \(name) MWGATE_FUZZ_REPLAY=\(Fuzz.hex($0))\n" } ?? ""
        let bytes = Array(text.utf8.prefix(slotWidth))
        let start = buffer + slot * slotWidth
        lengths[slot] = 0
        for (offset, byte) in bytes.enumerated() { start[offset] = byte }
        lengths[slot] = bytes.count
    }

    static func install() {
        lock.withLock {
            guard !installed else { return }
            installed = true
            for slot in 0..<slots { lengths[slot] = 0 }
            for signal in [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGFPE, SIGABRT] {
                _ = Glibc.signal(signal) { number in
                    for slot in 0..<CrashReporter.slots where CrashReporter.lengths[slot] > 0 {
                        _ = write(2, CrashReporter.buffer + slot * CrashReporter.slotWidth, CrashReporter.lengths[slot])
                    }
                    _ = Glibc.signal(number, SIG_DFL)
                    _ = raise(number)
                }
            }
        }
    }
}
