import Basics
import Foundation
import GNSS
import MetaWear
import Recording
import Testing
import UpstreamFixtures
@testable import Buffer
@testable import Uplink

/// The repository root (tests are in Tests/UplinkTests).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

func openStore(_ dir: String) throws -> BufferStore {
    try BufferStore(path: BufferStore.path(inStateDirectory: dir),
                    configuration: .init(userID: "GATEWAY-UUID", budget: DiskBudget(maxBytes: 1 << 40, minFreeBytes: 0),
                                         days: .utc, log: { _ in }))
}

/// What a synthetic recording produced.
struct RecordedSession {
    var sessionID: String
    var record: RecordsDocument
    var chunkNames: [String]
}

/// Records `seconds` of 100 Hz gyro from `boards` boards and 1 Hz fixes through a real
/// SessionController into `store`, stops and submits a survey.
@discardableResult
func recordSession(into store: BufferStore, boards: Int, seconds: Double, startSecond: Double = 1_800_000_000,
                   survey: HazardSurvey = .hazards(["pothole": 3, "ice": 1])) throws -> RecordedSession {
    let wall = Int64(startSecond * 1e9)
    let controller = SessionController(store: store, timeBase: TimeBase(wallNanoseconds: wall, monotonicNanoseconds: 0,
                                                                        systemClockSynchronised: true))
    for i in 0..<boards { controller.attach(board: "AA:BB:CC:DD:EE:0\(i)", gyroRateHertz: 100) }
    let sessionID = try controller.start(trigger: .controlAPI, now: 0)
    var k = 0
    var now: Int64 = 0
    var nextFix: Int64 = 0
    let end = Int64(seconds * 1e9)
    while now < end {
        now += 10_000_000
        k += 1
        while nextFix <= now {
            let when = Date(timeIntervalSince1970: startSecond + Double(nextFix) / 1e9)
            controller.ingest(fix: GNSSFix(time: when, timeOfDay: NMEATimeOfDay(microseconds: 0), mode: .threeD,
                                           latitude: 47 + Double(nextFix) / 1e9 * 1e-5, longitude: 8.5, hdop: 0.9,
                                           systemClockOffset: 0, arrival: when), now: nextFix)
            nextFix += 1_000_000_000
        }
        for i in 0..<boards {
            let raw = RawVector(x: Int16(truncatingIfNeeded: k), y: Int16(i), z: -7)
            controller.ingest(board: "AA:BB:CC:DD:EE:0\(i)", event: .gyro(MotionSamples(single: raw, scale: 16.4)),
                              receivedAt: now + Int64((k * 7919 + i * 31) % 5) * 1_000_000)
        }
        controller.tick(now: now)
    }
    _ = try controller.stop(trigger: .controlAPI, now: now)
    let record = try controller.submitSurvey(survey, sessionID: sessionID,
                                             submittedAt: Date(timeIntervalSince1970: startSecond + seconds + 30))
    return RecordedSession(sessionID: sessionID, record: record, chunkNames: record.gscopeData)
}

func loadSchema(_ name: String) throws -> [String: Any] {
    try loadDocumentSchema(name, repositoryRoot: repositoryRoot)
}

/// Plain JSON value of a document as we meant it (for equality with what came back).
func plainJSON(_ doc: SinkDocument) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(doc.jsonText.utf8)) as? [String: Any])
}

/// Compares two parsed JSON values numerically (1 == 1.0).
func jsonEqual(_ a: Any, _ b: Any) -> Bool {
    switch (a, b) {
    case let (x as [String: Any], y as [String: Any]):
        return x.count == y.count && x.allSatisfy { k, v in y[k].map { jsonEqual(v, $0) } ?? false }
    case let (x as [Any], y as [Any]):
        return x.count == y.count && zip(x, y).allSatisfy { jsonEqual($0, $1) }
    case (is NSNull, is NSNull): return true
    case let (x as String, y as String): return x == y
    case let (x as Bool, y as Bool) where a is Bool || b is Bool: return x == y
    default:
        guard let x = number(a), let y = number(b) else { return false }
        return x == y || abs(x - y) <= 1e-12 * max(abs(x), abs(y))
    }
}

private func number(_ v: Any) -> Double? {
    if let d = v as? Double { return d }
    if let i = v as? Int64 { return Double(i) }
    if let i = v as? Int { return Double(i) }
    return (v as? NSNumber)?.doubleValue
}
