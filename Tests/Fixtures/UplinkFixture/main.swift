import Foundation
import Recording
import Uplink

// mwuplink-fixture ROOT: writes 2,000-point realtime_data documents through DirectorySink
// forever, printing each name once its file is in place. The crash test kills it with
// SIGKILL at random moments and checks that every file present parses completely.
let arguments = CommandLine.arguments
guard arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: mwuplink-fixture ROOT\n".utf8))
    exit(2)
}
let root = arguments[1]
let sink: DirectorySink
do { sink = try DirectorySink(root: root) } catch {
    FileHandle.standardError.write(Data("mwuplink-fixture: \(error)\n".utf8))
    exit(1)
}
let points = (0..<2000).map { i in
    RecordedPoint(gyroscope: GyroReading(x: Float(i) * 0.25, y: -1.5, z: 2, timestamp: 1_800_000_000_000 + Double(i) * 10),
                  location: PointLocation(latitude: 47.1 + Double(i) * 1e-6, longitude: 8.5, timestamp: 1_800_000_000_000,
                                          accuracy: 3.5, age: 5))
}
var seq = 0
while true {
    let doc = RealtimeDataDocument(name: UUID().uuidString.uppercased(), sessionID: "CRASH", board: "B1", seq: seq, points: points)
    do { try await sink.write([.realtimeData(doc)]) } catch {
        FileHandle.standardError.write(Data("mwuplink-fixture: \(error)\n".utf8))
        exit(1)
    }
    FileHandle.standardOutput.write(Data((doc.name + "\n").utf8))
    seq += 1
}
