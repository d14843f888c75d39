import MetaWear
import Testing

@Suite struct DetectionTests {
    static func table(_ replies: [String]) -> ModuleTable {
        ModuleTable(replies.map { try! ModuleInfo(reply: hex($0)) })
    }

    static let mmr = table(["03 80 01 01", "13 80 00 01", "12 80 00 00", "14 80 00 00", "15 80 00 01", "16 80"])
    static let mmrl = table(["03 80 01 02", "13 80 00 01", "12 80", "14 80", "15 80 00 01", "16 80"])
    static let mms = table(["03 80 04 00", "13 80 01 00", "12 80 00 00", "14 80 00 00", "15 80 00 02"])

    @Test(arguments: [
        ("5", mmr, BoardModel.metaMotionR, IMUChip.bmi160),
        ("5", mmrl, .metaMotionRL, .bmi160),
        ("8", mms, .metaMotionS, .bmi270),
        ("6", mmrl, .metaMotionC, .bmi160),
        ("5\0", mmr, .metaMotionR, .bmi160),
    ])
    func detectsModelAndChip(_ number: String, _ modules: ModuleTable, _ model: BoardModel, _ chip: IMUChip) throws {
        #expect(BoardModel.detect(modelNumber: number, modules: modules) == model)
        #expect(try IMUChip.detect(modules: modules) == chip)
    }

    @Test func legacyModelNumbers() {
        let empty = ModuleTable()
        #expect(BoardModel.detect(modelNumber: "0", modules: empty) == .metaWearR)
        #expect(BoardModel.detect(modelNumber: "1", modules: empty) == .metaWearRG)
        #expect(BoardModel.detect(modelNumber: "1", modules: Self.mmr) == .metaWearRPro)
        #expect(BoardModel.detect(modelNumber: "2", modules: Self.mmr) == .metaWearCPro)
        #expect(BoardModel.detect(modelNumber: "2", modules: Self.table(["16 80 00 00"])) == .metaEnvironment)
        #expect(BoardModel.detect(modelNumber: "2", modules: empty) == .metaWearC)
        #expect(BoardModel.detect(modelNumber: "3", modules: empty) == .metaHealth)
        #expect(BoardModel.detect(modelNumber: "4", modules: empty) == .metaTracker)
        #expect(BoardModel.detect(modelNumber: "7", modules: empty) == .unknown)
        #expect(BoardModel.detect(modelNumber: nil, modules: empty) == .unknown)
    }

    @Test func chipDetectionErrors() throws {
        #expect(throws: ChipDetectionError.noMotionSensor) { try IMUChip.detect(modules: Self.table(["13 80", "03 80"])) }
        #expect(throws: ChipDetectionError.unsupportedAccelerometer(implementation: 3)) { try IMUChip.detect(modules: Self.table(["03 80 03 00"])) }
        #expect(throws: ChipDetectionError.unsupportedGyro(implementation: 7)) { try IMUChip.detect(modules: Self.table(["13 80 07 00"])) }
        #expect(throws: ChipDetectionError.conflicting(gyro: .bmi270, accelerometer: .bmi160)) {
            try IMUChip.detect(modules: Self.table(["13 80 01 00", "03 80 01 01"]))
        }
        #expect(try IMUChip.detect(modules: Self.table(["03 80 04 00"])) == .bmi270)
        #expect(ChipDetectionError.unsupportedAccelerometer(implementation: 3).description.contains("BMA255"))
    }
}
