import MetaWear
import Testing

/// `Device1.Modalias` (bluetoothd's text of the PnP ID, BlueZ `bt_modalias`) and what a board
/// description takes from it and from bluetoothd's battery reading.
@Suite struct PnPIDTests {
    @Test func parsesBluetoothAndUSBModaliases() {
        let board = PnPID(modalias: "bluetooth:v067Ep0005d0172")
        #expect(board == PnPID(source: .bluetoothSIG, vendor: 0x067E, product: 5, version: 0x0172))
        #expect(board?.isMbientLab == true && board?.modelNumber == "5")
        #expect(board?.modalias == "bluetooth:v067Ep0005d0172")
        let adapter = PnPID(modalias: "usb:v1D6Bp0246d0542")
        #expect(adapter == PnPID(source: .usb, vendor: 0x1D6B, product: 0x0246, version: 0x0542))
        #expect(adapter?.isMbientLab == false && adapter?.modelNumber == nil, "an MbientLab id from USB-IF is not MbientLab's")
        #expect(PnPID(modalias: "usb:v067Ep0005d0172")?.modelNumber == nil)
    }

    @Test(arguments: ["", "bluetooth:", "bluetooth:v067Ep0005", "bluetooth:v067Ep0005d01720", "pci:v00008086d00001234",
                      "bluetooth:vXXXXp0005d0172", "bluetooth:067Ev0005p0172d", "bluetooth v067Ep0005d0172"])
    func rejectsWhatIsNotAPnPModalias(_ text: String) {
        #expect(PnPID(modalias: text) == nil)
    }

    static let mmr = DetectionTests.mmr
    static func hiddenDescription(_ modules: ModuleTable, chip: IMUChip) -> BoardDescription {
        var description = BoardDescription(model: .unknown, chip: chip, firmwareRevision: nil, modelNumber: nil, hardwareRevision: nil,
                                           manufacturer: nil, serialNumber: nil, modules: modules, battery: nil, boardClock: nil)
        description.modelCandidates = BoardModel.candidates(modules: modules, chip: chip)
        return description
    }

    @Test func anMbientLabModaliasNamesTheModelButNotTheFirmware() {
        let hidden = Self.hiddenDescription(Self.mmr, chip: .bmi160)
        #expect(hidden.model == .unknown && hidden.modelSource == .moduleInfo)
        let named = hidden.adopting(HostReportedIdentity(modalias: "bluetooth:v067Ep0005d0172", batteryPercentage: 80))
        #expect(named.model == .metaMotionR && named.modelSource == .modalias && named.modelCandidates == [.metaMotionR])
        #expect(named.firmwareRevision == nil && !named.description.contains("firmware"))
        #expect(named.battery == BatteryState(percent: 80, millivolts: nil))
        #expect(named.missingIdentity?.contains("model named from Modalias bluetooth:v067Ep0005d0172") == true)
    }

    /// A Modalias that names a model of the other chip, or another vendor's, names nothing.
    @Test(arguments: ["bluetooth:v067Ep0008d0173", "bluetooth:v000Fp0005d0172", "usb:v1D6Bp0246d0542"])
    func aModaliasThatDoesNotFitNamesNothing(_ modalias: String) {
        let hidden = Self.hiddenDescription(Self.mmr, chip: .bmi160)
        let adopted = hidden.adopting(HostReportedIdentity(modalias: modalias))
        #expect(adopted.model == .unknown && adopted.modelSource == .moduleInfo, "\(adopted)")
        #expect(adopted.missingIdentity?.contains("Modalias \(modalias) does not name a MetaWear model") == true,
                "\(adopted.missingIdentity ?? "nil")")
    }

    /// Device Information and the settings module win over bluetoothd's readings.
    @Test func theBoardsOwnAnswersComeFirst() {
        var full = Self.hiddenDescription(Self.mmr, chip: .bmi160)
        full.modelNumber = "5"
        full.model = .metaMotionR
        full.firmwareRevision = "1.7.2"
        full.modelCandidates = []
        full.battery = BatteryState(percent: 97, millivolts: 4100)
        let adopted = full.adopting(HostReportedIdentity(modalias: "bluetooth:v067Ep0006d0000", batteryPercentage: 10))
        #expect(adopted.model == .metaMotionR && adopted.modelSource == .deviceInformation)
        #expect(adopted.battery == BatteryState(percent: 97, millivolts: 4100))
        #expect(adopted.missingIdentity == nil)
    }

    @Test func batteryFromTheGATTLevelWithoutBattery1() {
        #expect(HostReportedIdentity(gattBatteryLevel: 55).battery == BatteryState(percent: 55, millivolts: nil))
        #expect(HostReportedIdentity(batteryPercentage: 60, gattBatteryLevel: 55).battery?.percent == 60)
        #expect(HostReportedIdentity().battery == nil)
        #expect(BatteryState(percent: 60, millivolts: nil).description == "60 %")
    }
}
