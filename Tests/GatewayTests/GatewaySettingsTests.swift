import BlueZ
import Foundation
import Gateway
import MetaWear
import Testing

struct GatewaySettingsTests {
    static let address = BluetoothAddress("C4:7C:8D:6A:11:22")!

    @Test func refusesSettingsThatCannotRecord() throws {
        let accelOnly = try StreamingConfiguration(gyro: nil, accelerometer: AccelerometerConfiguration(rate: .hz50, range: .g4))
        let gyro = try StreamingConfiguration(gyro: GyroConfiguration(rate: .hz100, range: .dps2000))
        #expect(throws: GatewaySettingsError("the gyro must be streamed: recorded points are gyro samples")) {
            try GatewaySettings(boards: .addresses([Self.address]), streaming: accelOnly, stateDirectory: "/tmp/x").validate()
        }
        #expect(throws: GatewaySettingsError("no boards: give board addresses or enable discovery")) {
            try GatewaySettings(boards: .addresses([]), streaming: gyro, stateDirectory: "/tmp/x").validate()
        }
        #expect(throws: GatewaySettingsError("bad hazard name 'deep hole' (non-empty, no spaces)")) {
            try GatewaySettings(boards: .discovery(allowList: nil, namePrefix: "MetaWear"), streaming: gyro,
                                hazardCatalogue: ["deep hole"], stateDirectory: "/tmp/x").validate()
        }
        try GatewaySettings(boards: .discovery(allowList: [Self.address], namePrefix: nil), streaming: gyro,
                            stateDirectory: "/tmp/x").validate()
    }
}
