import Basics
import Boards
import Buffer
import GNSS
import MetaWear
import StatusModel

// Where the gateway's data enters the status model: the buffer's and the receiver's own
// types in the model's words, in one place.

extension BacklogStatus {
    /// The buffer's upload backlog.
    public init(_ stats: BacklogStats) {
        self.init(documents: stats.count, bytes: stats.bytes, oldestUnsentAgeSeconds: stats.oldestUnsentAge,
                  dead: stats.dead, inFlight: stats.inFlight)
    }
}

extension GNSSFix.Mode {
    /// The status model's word for the mode (`no_fix`, `2d`, `3d`).
    var statusName: String {
        switch self {
        case .noFix: GNSSStatus.Mode.noFix
        case .twoD: GNSSStatus.Mode.twoD
        case .threeD: GNSSStatus.Mode.threeD
        }
    }
}

extension BoardStatus {
    /// Takes a battery reading.
    mutating func setBattery(_ battery: BatteryState) {
        batteryPercent = Int(battery.percent)
        batteryMillivolts = battery.millivolts.map(Int.init)
    }
}

extension StreamStatus {
    /// What `gauge` has seen.
    init(_ gauge: StreamGauge) {
        let reading = gauge.reading
        self.init(name: gauge.name, capacity: gauge.capacity, highWater: reading.highWater, dropped: reading.dropped)
    }

    /// The data path's bounded streams: the boards' links, sessions and fleet stream (what the
    /// pipeline reads), and the receiver's fixes.
    static var dataPath: [StreamStatus] { (BoardEventStream.dataPathGauges + [GNSSFix.streamGauge]).map(StreamStatus.init) }
}
