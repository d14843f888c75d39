import Foundation
import Testing

/// The VM scenarios' document check (scripts/vm/document_check.py): what `make bench` and the
/// real-BlueZ groups report as duplicated, out of order or missing in the directory sink's
/// documents. Every session numbers its documents from `seq` 0, so the check must take each
/// session on its own: the bench's short control session (recorded before the link drops) was
/// counted as 682 and 2,433 samples out of order in two runs when documents were ordered by
/// `seq` alone.
@Suite("VM document check")
struct DocumentCheckTests {
    static let board = "00:AA:01:01:00:01"

    /// One document of `board`: gyro points whose x carries the sample index as mwsim's signal
    /// does (raw = index at 16.4 LSB per °/s), 10 ms apart.
    static func document(session: String, seq: Int, indices: [Int], timeOrigin: Int = 1_795_797_478_000) -> [String: Any] {
        let points = indices.map { index -> [String: Any] in
            ["gyroscope": ["x": Double(index) / 16.4, "y": 0.0, "z": 0.0, "timestamp": timeOrigin + index * 10]]
        }
        return ["session_id": session, "board": board, "seq": seq, "data": points, "schema_version": 1]
    }

    /// Writes `documents` as an outbox (file names in the given order) and runs the check on it.
    static func check(_ documents: [[String: Any]]) throws -> [String: Any] {
        let outbox = FileManager.default.temporaryDirectory.appendingPathComponent("mwgate-doccheck-\(UUID().uuidString)")
        let folder = outbox.appendingPathComponent("realtime_data")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: outbox) }
        for (number, document) in documents.enumerated() {
            let data = try JSONSerialization.data(withJSONObject: document)
            try data.write(to: folder.appendingPathComponent(String(format: "%04d.json", number)))
        }
        let script = SoakTests.repository.appendingPathComponent("scripts/vm/document_check.py").path
        let (status, output) = try SoakTests.runDriver([script, outbox.path, board, "1"])
        #expect(status == 0, "document_check.py failed: \(output)")
        let report = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
        return try #require(report, "no JSON report: \(output)")
    }

    @Test("Two sessions, each numbered from seq 0: neither is out of order, and no gap between them")
    func sessionsAreCheckedApart() throws {
        // The bench's run: a 682-sample control session, then the session with the link drops
        // (its documents listed first, as the outbox directory happened to list them).
        let control = "45E453F6-59C6-42E8-9474-1BB2706ECE27", bench = "3630B14B-AC83-4FA4-BF82-1A96D206AB21"
        let report = try Self.check([
            Self.document(session: bench, seq: 0, indices: Array(744..<1744)),
            Self.document(session: bench, seq: 1, indices: Array(1744..<2744)),
            Self.document(session: control, seq: 0, indices: Array(0..<400)),
            Self.document(session: control, seq: 1, indices: Array(400..<682)),
            Self.document(session: bench, seq: 2, indices: Array(2744..<3000)),
        ])
        #expect(report["sessions"] as? Int == 2)
        #expect(report["count"] as? Int == 682 + 2256)
        #expect(report["reordered"] as? Int == 0, "\(report)")
        #expect(report["time_backwards"] as? Int == 0, "\(report)")
        #expect(report["duplicates"] as? Int == 0)
        #expect((report["gaps"] as? [Any])?.isEmpty == true, "the pause between sessions is no gap: \(report)")
    }

    @Test("Within a session, a stretch out of order, a duplicate and a gap are still found, with where")
    func disorderInASessionIsFound() throws {
        let session = "94CF8E26-AA83-4ED3-968A-5642DD8332C1"
        let report = try Self.check([
            Self.document(session: session, seq: 0, indices: Array(0..<100) + [99]),
            Self.document(session: session, seq: 1, indices: Array(150..<200)),
            Self.document(session: session, seq: 2, indices: Array(100..<150) + Array(200..<250) + Array(260..<270)),
        ])
        #expect(report["reordered"] as? Int == 50, "\(report)")
        #expect(report["time_backwards"] as? Int == 50, "\(report)")
        #expect(report["duplicates"] as? Int == 1)
        let first = report["first_out_of_order"] as? [String: Any]
        #expect(first?["seq"] as? Int == 2 && first?["position"] as? Int == 0 && first?["previous_index"] as? Int == 199,
                "\(report)")
        let gaps = (report["gaps"] as? [[Int]]) ?? []
        #expect(gaps == [[100, 50], [250, 10]], "\(report)")
    }
}
