import ControlAPI
import DBus
import StatusModel

/// Maps the status model to the D-Bus properties of `io.mwgate.Gateway1`: the one place the
/// status meets D-Bus (the JSON answers are the model encoded as is).
enum StatusMapping {
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
                                 .int32(b.batteryPercent.map { Int32(clamping: $0) } ?? -1)])
        }
        let fix = DBusValue.structure([
            .string(s.gnss.mode ?? "none"), .boolean(s.gnss.hasPosition),
            .double(s.gnss.latitude ?? .nan), .double(s.gnss.longitude ?? .nan),
            .int32(s.gnss.satellitesUsed.map { Int32(clamping: $0) } ?? -1),
        ])
        let backlog = DBusValue.structure([
            .uint32(UInt32(clamping: s.backlog?.documents ?? 0)), .int64(s.backlog?.bytes ?? 0),
            .uint32(UInt32(clamping: s.backlog?.dead ?? 0)),
        ])
        return [
            P.state: .string(s.session.state),
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
