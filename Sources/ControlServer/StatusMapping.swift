import ControlAPI
import DBus
import Foundation
import Gateway
import GNSS

/// Converts the pipeline's snapshot to the API's payloads and property values.
enum StatusMapping {
    static func payload(_ s: GatewayStatus, sync: SyncStatusPayload, storage: StoragePayload) -> StatusPayload {
        let now = s.generatedAt
        return StatusPayload(
            generatedAt: now.timeIntervalSince1970,
            boards: s.boards.map(board),
            gnss: GNSSPayload(source: s.gnss.source, running: s.gnss.isRunning, mode: s.gnss.mode.map(modeName),
                              hasPosition: s.gnss.hasPosition, latitude: s.gnss.latitude, longitude: s.gnss.longitude,
                              satellitesUsed: s.gnss.satellitesUsed, lastFixAt: s.gnss.lastFixAt?.timeIntervalSince1970,
                              fixAgeSeconds: s.gnss.age(at: now), fixesReceived: s.gnss.fixesReceived),
            session: SessionPayload(state: s.session.isRecording ? "recording" : "idle", sessionID: s.session.sessionID,
                                    trigger: s.session.trigger, startedAt: s.session.startedAt?.timeIntervalSince1970,
                                    awaitingSurvey: s.session.awaitingSurvey, chunksSealed: s.session.chunksSealed,
                                    mode: s.session.mode.rawValue),
            clock: ClockPayload(systemClockSynchronised: s.clock.systemClockSynchronised, timeSource: s.clock.timeSource.rawValue),
            backlog: s.backlog.map {
                BacklogPayload(documents: $0.count, bytes: $0.bytes, oldestUnsentAgeSeconds: $0.oldestUnsentAge,
                               dead: $0.dead, inFlight: $0.inFlight)
            },
            sync: sync,
            storage: storage,
            problems: s.lastErrors.map { ProblemPayload(at: $0.at.timeIntervalSince1970, area: $0.area, message: $0.message) })
    }

    static func board(_ b: BoardStatus) -> BoardPayload {
        BoardPayload(address: b.address, state: b.state, streaming: b.isStreaming, model: b.model,
                     batteryPercent: b.battery.map { Int($0.percent) }, batteryMillivolts: b.battery.map { Int($0.millivolts) },
                     gyroRateHz: b.gyroRateHertz, accelerometerRateHz: b.accelerometerRateHertz,
                     gyroSamplesReceived: b.gyroSamplesReceived, gyroSamplesInSession: b.gyroSamplesInSession,
                     lastSampleAt: b.lastSampleAt?.timeIntervalSince1970, missingIdentity: b.missingIdentity)
    }

    static func modeName(_ mode: GNSSFix.Mode) -> String {
        switch mode {
        case .noFix: "no_fix"
        case .twoD: "2d"
        case .threeD: "3d"
        }
    }

    /// Signature of the `Boards` property: address, state, streaming, battery percent (-1 unknown).
    static let boardsType = DBusType.array(.structure([.string, .string, .boolean, .int32]))
    /// Signature of `Fix`: mode (`none` before the first fix), has position, latitude,
    /// longitude (NaN without position), satellites used (-1 unknown).
    static let fixType = DBusType.structure([.string, .boolean, .double, .double, .int32])
    /// Signature of `Backlog`: documents waiting, their bytes, dead documents.
    static let backlogType = DBusType.structure([.uint32, .int64, .uint32])

    /// The live property values (everything but the constants) for `s`. Sample counters are
    /// left out on purpose: they change 100 times a second and would flood the bus.
    static func properties(_ s: GatewayStatus) -> [String: DBusValue] {
        typealias P = GatewayControl.Property
        let boards = s.boards.map { b in
            DBusValue.structure([.string(b.address), .string(b.state), .boolean(b.isStreaming),
                                 .int32(b.battery.map { Int32($0.percent) } ?? -1)])
        }
        let fix = DBusValue.structure([
            .string(s.gnss.mode.map(modeName) ?? "none"), .boolean(s.gnss.hasPosition),
            .double(s.gnss.latitude ?? .nan), .double(s.gnss.longitude ?? .nan),
            .int32(s.gnss.satellitesUsed.map { Int32(clamping: $0) } ?? -1),
        ])
        let backlog = DBusValue.structure([
            .uint32(UInt32(clamping: s.backlog?.count ?? 0)), .int64(s.backlog?.bytes ?? 0),
            .uint32(UInt32(clamping: s.backlog?.dead ?? 0)),
        ])
        return [
            P.state: .string(s.session.isRecording ? "recording" : "idle"),
            P.sessionID: .string(s.session.sessionID ?? ""),
            P.awaitingSurvey: .array(element: .string, s.session.awaitingSurvey.map { .string($0) }),
            P.boards: .array(element: boardsType.arrayElement, boards),
            P.fix: fix,
            P.backlog: backlog,
            P.clockSynchronised: .boolean(s.clock.systemClockSynchronised),
        ]
    }

    /// Whether two property values are the same (NaN equals NaN here, unlike `==`).
    static func same(_ a: DBusValue, _ b: DBusValue) -> Bool {
        switch (a, b) {
        case (.double(let x), .double(let y)): x == y || (x.isNaN && y.isNaN)
        case (.structure(let x), .structure(let y)), (.array(_, let x), .array(_, let y)):
            x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        default: a == b
        }
    }
}

extension DBusType {
    /// The element type of an array type (self otherwise).
    var arrayElement: DBusType {
        if case .array(let element) = self { return element }
        return self
    }
}
