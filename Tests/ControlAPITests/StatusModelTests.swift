import ControlAPI
import DBus
import StatusModel
import Testing
@testable import ControlServer
@testable import mwctl

/// The one status model as the user meets it: `GetStatus`/`mwctl status --json` keep API
/// version 1's field names and values byte for byte (the expected texts were written by the
/// three separate models this one replaced), `mwctl status` reads the same, the D-Bus
/// properties carry the same values, and what the daemon sends mwctl decodes unchanged.
struct StatusModelTests {
    static let full = GatewayStatus(
        generatedAt: 1_790_000_123.25,
        boards: [
            BoardStatus(address: "AA:BB:CC:DD:EE:01", state: "streaming (MetaMotion S (BMI270), firmware 1.7.3, gyro rev 1)",
                        isStreaming: true, model: "MetaMotion S (BMI270), firmware 1.7.3, gyro rev 1", batteryPercent: 87,
                        batteryMillivolts: 4012, gyroRateHz: 100, accelerometerRateHz: 50, gyroSamplesReceived: 12345,
                        gyroSamplesInSession: 678, lastSampleAt: 1_790_000_122.875),
            BoardStatus(address: "AA:BB:CC:DD:EE:02", state: #"reconnecting (attempt 2, last failure: "timeout"/x)"#,
                        missingIdentity: "Device Information not exported by BlueZ", gyroRateHz: 200),
        ],
        gnss: GNSSStatus(source: "serial:/dev/ttyACM0", isRunning: true, mode: GNSSStatus.Mode.threeD, hasPosition: true,
                         latitude: 52.123456789, longitude: -1.5, satellitesUsed: 9, lastFixAt: 1_790_000_121.5,
                         fixAgeSeconds: 1.75, fixesReceived: 321),
        session: SessionStatus(state: SessionStatus.recording, sessionID: "2026-11-27T12-00-00Z-ab12", trigger: "control_api",
                               startedAt: 1_790_000_000, awaitingSurvey: ["s-old"], chunksSealed: 4, mode: "manual"),
        clock: ClockStatus(systemClockSynchronised: false, timeSource: "gnss_corrected"),
        backlog: BacklogStatus(documents: 12, bytes: 345678, oldestUnsentAgeSeconds: 61.5, dead: 1, inFlight: 2),
        sync: UpstreamSyncStatus(configured: true, endpoint: "https://firestore.googleapis.com", state: "idle",
                                 credentialsPresent: true, lastSuccessAt: 1_790_000_050, lastError: "HTTP 503", documentsSent: 17),
        storage: StorageStatus(stateDirectory: "/var/lib/mwgate", freeBytes: 1_000_000_000, bufferBytes: 2_500_000,
                               budgetMaxBytes: 1 << 30, budgetMinFreeBytes: 100 << 20),
        problems: [GatewayProblem(at: 1_790_000_100, area: "board", message: "AA:BB:CC:DD:EE:02 lost: link")])

    static let bare = GatewayStatus(
        generatedAt: 1_790_000_123.25, boards: [], gnss: GNSSStatus(source: nil),
        session: SessionStatus(state: SessionStatus.idle, sessionID: nil, trigger: nil, startedAt: nil, awaitingSurvey: [],
                               chunksSealed: 0, mode: "always"),
        clock: ClockStatus(systemClockSynchronised: false, timeSource: "gnss_corrected"), backlog: nil,
        sync: .notConfigured,
        storage: StorageStatus(stateDirectory: "/tmp/x", freeBytes: nil, bufferBytes: nil, budgetMaxBytes: 5, budgetMinFreeBytes: 0),
        problems: [])

    @Test func statusJSONKeepsTheFieldsOfAPIVersion1() throws {
        #expect(try ControlJSON.encode(Self.full) == #"{"backlog":{"bytes":345678,"dead":1,"documents":12,"inFlight":2,"oldestUnsentAgeSeconds":61.5},"boards":[{"accelerometerRateHz":50,"address":"AA:BB:CC:DD:EE:01","batteryMillivolts":4012,"batteryPercent":87,"gyroRateHz":100,"gyroSamplesInSession":678,"gyroSamplesReceived":12345,"lastSampleAt":1790000122.875,"model":"MetaMotion S (BMI270), firmware 1.7.3, gyro rev 1","state":"streaming (MetaMotion S (BMI270), firmware 1.7.3, gyro rev 1)","streaming":true},{"address":"AA:BB:CC:DD:EE:02","gyroRateHz":200,"gyroSamplesInSession":0,"gyroSamplesReceived":0,"missingIdentity":"Device Information not exported by BlueZ","state":"reconnecting (attempt 2, last failure: \"timeout\"/x)","streaming":false}],"clock":{"systemClockSynchronised":false,"timeSource":"gnss_corrected"},"generatedAt":1790000123.25,"gnss":{"fixAgeSeconds":1.75,"fixesReceived":321,"hasPosition":true,"lastFixAt":1790000121.5,"latitude":52.123456789,"longitude":-1.5,"mode":"3d","running":true,"satellitesUsed":9,"source":"serial:/dev/ttyACM0"},"problems":[{"area":"board","at":1790000100,"message":"AA:BB:CC:DD:EE:02 lost: link"}],"session":{"awaitingSurvey":["s-old"],"chunksSealed":4,"mode":"manual","sessionID":"2026-11-27T12-00-00Z-ab12","startedAt":1790000000,"state":"recording","trigger":"control_api"},"storage":{"budgetMaxBytes":1073741824,"budgetMinFreeBytes":104857600,"bufferBytes":2500000,"freeBytes":1000000000,"stateDirectory":"/var/lib/mwgate"},"sync":{"configured":true,"credentialsPresent":true,"documentsSent":17,"endpoint":"https://firestore.googleapis.com","lastError":"HTTP 503","lastSuccessAt":1790000050,"state":"idle"}}"#)
        #expect(try ControlJSON.encode(Self.bare) == #"{"boards":[],"clock":{"systemClockSynchronised":false,"timeSource":"gnss_corrected"},"generatedAt":1790000123.25,"gnss":{"fixesReceived":0,"hasPosition":false,"running":false},"problems":[],"session":{"awaitingSurvey":[],"chunksSealed":0,"mode":"always","state":"idle"},"storage":{"budgetMaxBytes":5,"budgetMinFreeBytes":0,"stateDirectory":"/tmp/x"},"sync":{"configured":false,"documentsSent":0,"state":"disabled"}}"#)
        #expect(try ControlJSON.encode(Self.full.boards) == #"[{"accelerometerRateHz":50,"address":"AA:BB:CC:DD:EE:01","batteryMillivolts":4012,"batteryPercent":87,"gyroRateHz":100,"gyroSamplesInSession":678,"gyroSamplesReceived":12345,"lastSampleAt":1790000122.875,"model":"MetaMotion S (BMI270), firmware 1.7.3, gyro rev 1","state":"streaming (MetaMotion S (BMI270), firmware 1.7.3, gyro rev 1)","streaming":true},{"address":"AA:BB:CC:DD:EE:02","gyroRateHz":200,"gyroSamplesInSession":0,"gyroSamplesReceived":0,"missingIdentity":"Device Information not exported by BlueZ","state":"reconnecting (attempt 2, last failure: \"timeout\"/x)","streaming":false}]"#)
    }

    @Test func streamsCarryTheirHighWaterMarks() throws {
        var status = Self.bare
        status.streams = [StreamStatus(name: "board_events", capacity: 16384, highWater: 12, dropped: 0)]
        #expect(try ControlJSON.encode(status).contains(#""streams":[{"capacity":16384,"dropped":0,"highWater":12,"name":"board_events"}]"#))
        #expect(!StatusView.text(status).contains("Streams:"), "nothing dropped: no line")
        status.streams?.append(StreamStatus(name: "link_notifications", capacity: 4096, highWater: 4096, dropped: 7))
        #expect(StatusView.text(status).contains("Streams:  link_notifications dropped 7 (full at 4096)"))
    }

    @Test func whatTheDaemonSendsMwctlReadsBack() throws {
        for status in [Self.full, Self.bare] {
            #expect(try ControlJSON.decode(GatewayStatus.self, from: try ControlJSON.encode(status)) == status)
        }
        let idle = BoardStatus(address: "AA:BB:CC:DD:EE:03", state: "idle (sensors off; MetaMotion S)", gyroRateHz: 100)
        let decoded = try ControlJSON.decode(BoardStatus.self, from: try ControlJSON.encode(idle))
        #expect(decoded.isIdle && decoded.isConnected && !decoded.isStreaming)
        #expect(!Self.full.boards[1].isConnected)
    }

    @Test func statusTextReadsAsBefore() {
        #expect(StatusView.text(Self.full) == #"""
        Session:  recording 2026-11-27T12-00-00Z-ab12 (control_api) for 2 min, mode manual, 4 chunk(s) sealed
                  awaiting survey: s-old (mwctl survey)
        Boards:   AA:BB:CC:DD:EE:01  MetaMotion S (BMI270), firmware 1.7.3  streaming                                            gyro 100 Hz, accel 50 Hz  battery 87%  12345 samples  last sample 0.4 s ago
                  AA:BB:CC:DD:EE:02  -                                      reconnecting (attempt 2, last failure: "timeout"/x)  gyro 200 Hz               battery ?    0 samples      no sample yet
        GNSS:     3d fix 52.12346, -1.50000, 9 satellites, 2 s old [serial:/dev/ttyACM0]
        Clock:    NOT synchronised; point times: gnss_corrected
        Backlog:  12 document(s), 337.6 KiB, oldest 1 min, 1 dead
        Storage:  2.4 MiB of 1.0 GiB budget, 953.7 MiB free
        Sync:     idle to https://firestore.googleapis.com, last success \#(Format.time(1_790_000_050)), last error: HTTP 503
        Problems: \#(Format.time(1_790_000_100)) board: AA:BB:CC:DD:EE:02 lost: link

        """#)
        #expect(StatusView.text(Self.bare) == #"""
        Session:  idle, mode always, 0 chunk(s) sealed
        Boards:   none (mwctl boards scan / boards add ADDRESS)
        GNSS:     no receiver configured
        Clock:    NOT synchronised; point times: gnss_corrected
        Backlog:  unknown (the buffer could not be read)
        Storage:  ? of 5 B budget, free space unknown
        Sync:     no upstream configured

        """#)
    }

    @Test func propertiesCarryTheSameValues() {
        let properties = StatusMapping.properties(Self.full)
        #expect(properties["State"] == .string("recording"))
        #expect(properties["SessionID"] == .string("2026-11-27T12-00-00Z-ab12"))
        #expect(properties["AwaitingSurvey"] == .array(element: .string, [.string("s-old")]))
        #expect(properties["Boards"] == .array(element: StatusMapping.boardsType.arrayElement, [
            .structure([.string("AA:BB:CC:DD:EE:01"), .string("streaming (MetaMotion S (BMI270), firmware 1.7.3, gyro rev 1)"),
                        .boolean(true), .int32(87)]),
            .structure([.string("AA:BB:CC:DD:EE:02"), .string(#"reconnecting (attempt 2, last failure: "timeout"/x)"#),
                        .boolean(false), .int32(-1)]),
        ]))
        #expect(properties["Fix"] == .structure([.string("3d"), .boolean(true), .double(52.123456789), .double(-1.5), .int32(9)]))
        #expect(properties["Backlog"] == .structure([.uint32(12), .int64(345678), .uint32(1)]))
        #expect(properties["ClockSynchronised"] == .boolean(false))
        let bare = StatusMapping.properties(Self.bare)
        #expect(bare["State"] == .string("idle") && bare["SessionID"] == .string(""))
        #expect(StatusMapping.same(bare["Fix"]!, .structure([.string("none"), .boolean(false), .double(.nan), .double(.nan), .int32(-1)])))
        #expect(bare["Backlog"] == .structure([.uint32(0), .int64(0), .uint32(0)]))
    }
}
