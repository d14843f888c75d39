// mwrecord-fixture: records from simulated MetaWear boards and an NMEA replay into a real
// buffer database, printing what it accepted and sealed, so the crash test can SIGKILL it at
// random moments and check that nothing reported is lost.
//
// Usage: mwrecord-fixture --db PATH [--nmea FILE] [--boards N] [--rate HZ] [--packed]
//                         [--speed X] [--seed S] [--seconds SIM_SECONDS] [--survey]
//
// Simulated time runs `speed` times faster than real time; notifications are released in
// BLE connection events 7.5 to 30 ms apart. Fixes replay the NMEA file's positions at 1 Hz,
// restamped onto the simulated clock. Output lines (flushed at once):
//   session ID | sealed NAME BOARD SEQ POINTS | accepted BOARD SAMPLES | recovered ID | stopped ID
import Basics
import Buffer
import Foundation
import GNSS
import MetaWear
import MetaWearBoardModel
import Recording

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
func die(_ message: String) -> Never {
    FileHandle.standardError.write(Data(("mwrecord-fixture: " + message + "\n").utf8))
    exit(2)
}

var options: [String: String] = [:]
var flags = Set<String>()
var args = Array(CommandLine.arguments.dropFirst())
while let a = args.first {
    args.removeFirst()
    if ["--packed", "--survey"].contains(a) { flags.insert(a); continue }
    guard let v = args.first else { die("missing value for \(a)") }
    args.removeFirst()
    options[a] = v
}
guard let dbPath = options["--db"] else { die("--db PATH is required") }
let boardCount = Int(options["--boards"] ?? "2") ?? 2
let rate = Double(options["--rate"] ?? "100") ?? 100
let speed = Double(options["--speed"] ?? "1") ?? 1
let seed = UInt64(options["--seed"] ?? "1") ?? 1
let simSeconds = options["--seconds"].flatMap(Double.init)
let packed = flags.contains("--packed")

/// Positions from the NMEA replay (or a synthetic walk when none is given).
func replayPositions(_ nmeaPath: String?) -> [(lat: Double, lon: Double, hdop: Double?)] {
    guard let path = nmeaPath else {
        return (0..<600).map { (47.6 + Double($0) * 0.00001, -122.3, 1.0) }
    }
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { die("cannot read \(path)") }
    var assembler = FixAssembler()
    var out: [(Double, Double, Double?)] = []
    for line in text.split(whereSeparator: \.isNewline) where line.hasPrefix("$") {
        for fix in assembler.ingest(NMEAParser.parse(text: String(line)), arrival: Date()) where fix.hasPosition {
            out.append((fix.latitude!, fix.longitude!, fix.hdop))
        }
    }
    if out.isEmpty { die("no positions in \(path)") }
    return out
}

/// Prints every seal after it committed.
final class ReportingStore: RecordingStore {
    let inner: BufferStore
    init(_ inner: BufferStore) { self.inner = inner }
    func beginSession(_ start: SessionStart) throws { try inner.beginSession(start) }
    func append(_ segments: [OpenSegment]) throws { try inner.append(segments) }
    func seal(_ chunk: ChunkToSeal) throws -> String {
        let name = try inner.seal(chunk)
        say("sealed \(name) \(chunk.board) \(chunk.seq) \(chunk.pointCount)")
        return name
    }
    func endSession(_ end: SessionEnd) throws { try inner.endSession(end) }
    func submitSurvey(sessionID: String, survey: HazardSurvey, submittedAt: Date) throws -> RecordsDocument {
        try inner.submitSurvey(sessionID: sessionID, survey: survey, submittedAt: submittedAt)
    }
    func sessionsAwaitingSurvey() throws -> [String] { try inner.sessionsAwaitingSurvey() }
}

let store: BufferStore
do {
    store = try BufferStore(path: dbPath, configuration: .init(userID: "00000000-0000-4000-8000-000000000001",
                                                                budget: DiskBudget(maxBytes: 1 << 40, minFreeBytes: 0)))
    for id in try store.recoverInterruptedSessions() { say("recovered \(id)") }
} catch { die("cannot open \(dbPath): \(error)") }

let positions = replayPositions(options["--nmea"])
let wall0 = Date()
var base = TimeBase(wallNanoseconds: Int64(wall0.timeIntervalSince1970 * 1e9), monotonicNanoseconds: 0, systemClockSynchronised: true)
let controller = SessionController(store: ReportingStore(store), timeBase: base)
let gyroConfig = GyroConfiguration(rate: .hz100, range: .dps2000)
var boards: [(name: String, board: SimulatedBoard, decoder: NotificationDecoder)] = []
for i in 0..<boardCount {
    var board = SimulatedBoard(profile: .metaMotionR, seed: UInt32(i + 1))
    for packet in Commands.startGyro(gyroConfig, mode: packed ? .packed : .single, chip: .bmi160) { _ = board.write(packet.bytes) }
    let name = String(format: "C4:5A:2B:00:00:%02X", i + 1)
    boards.append((name, board, NotificationDecoder(chip: .bmi160, gyroRange: .dps2000)))
    controller.attach(board: name, gyroRateHertz: rate)
}
let sessionID: String
do { sessionID = try controller.start(trigger: .controlAPI, now: 0) } catch { die("start: \(error)") }
say("session \(sessionID)")

var rng = SeededRandom(seed: seed)
var simNow: Int64 = 0
var nextFix: Int64 = 0
var fixIndex = 0
var accepted = [Int](repeating: 0, count: boardCount)
let realStart = Date()
while simSeconds.map({ Double(simNow) < $0 * 1e9 }) ?? true {
    simNow += Int64(rng.uniform(7.5, 30) * 1e6)
    while nextFix <= simNow {
        let p = positions[fixIndex % positions.count]
        fixIndex += 1
        let when = wall0.addingTimeInterval(Double(nextFix) / 1e9)
        let fix = GNSSFix(time: when, timeOfDay: NMEATimeOfDay(microseconds: 0), mode: .threeD,
                          latitude: p.lat, longitude: p.lon, hdop: p.hdop, systemClockOffset: 0, arrival: when)
        controller.ingest(fix: fix, now: nextFix)
        nextFix += 1_000_000_000
    }
    for i in boards.indices {
        let notes = boards[i].board.advance(to: UInt64(simNow))
        let receivedAt = simNow + Int64(rng.uniform(0, 0.3) * 1e6)
        for n in notes {
            let event = boards[i].decoder.decode(n.bytes)
            if case let .gyro(s) = event { accepted[i] += s.count }
            controller.ingest(board: boards[i].name, event: event, receivedAt: receivedAt)
        }
        say("accepted \(boards[i].name) \(accepted[i])")
    }
    controller.tick(now: simNow)
    if let e = controller.lastStoreError { die("store error: \(e)") }
    let ahead = Double(simNow) / 1e9 / speed - Date().timeIntervalSince(realStart)
    if ahead > 0 { Thread.sleep(forTimeInterval: ahead) }
}
do {
    try controller.stop(trigger: .controlAPI, now: simNow)
    say("stopped \(sessionID)")
    if flags.contains("--survey") {
        let record = try controller.submitSurvey(.hazards(["pothole": 3, "crossing": 1]), submittedAt: Date())
        say("record \(record.name) \(record.gscopeData.count)")
    }
} catch { die("stop: \(error)") }
