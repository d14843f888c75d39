@testable import BlueZSimulator
import DBus
import Testing

/// The kernel management packets `mwsim --peripheral` ends its link with (a real board ends
/// it at the link layer on `FE 06`; bluetoothd's `Device1.Disconnect` waits 2 s first). The
/// layouts are BlueZ's `doc/mgmt-api.txt` and `lib/mgmt.h`; our machines' kernel has no
/// Bluetooth, so the socket itself runs only in the real-BlueZ VM (group stop).
struct ManagementPacketsTests {
    let board = ManagementPackets.Address(bytes: [0x00, 0xAA, 0x01, 0x01, 0x00, 0x01], type: 1)

    @Test func disconnectCarriesTheAddressLeastSignificantByteFirstAndItsType() {
        #expect(ManagementPackets.disconnect(index: 1, address: board)
                == [0x14, 0x00, 0x01, 0x00, 0x07, 0x00, 0x01, 0x00, 0x01, 0x01, 0xAA, 0x00, 0x01])
        #expect(ManagementPackets.getConnections(index: 2) == [0x15, 0x00, 0x02, 0x00, 0x00, 0x00])
    }

    @Test func getConnectionsRepliesAreReadBackToAddresses() throws {
        // Command Complete (0x0001) on hci1: opcode 0x0015, success, 2 links.
        let packet: [UInt8] = [0x01, 0x00, 0x01, 0x00, 0x13, 0x00, 0x15, 0x00, 0x00, 0x02, 0x00,
                               0x01, 0x00, 0x01, 0x01, 0xAA, 0x00, 0x01,
                               0x05, 0x04, 0x03, 0x02, 0x01, 0xC0, 0x02]
        let reply = try #require(ManagementPackets.reply(packet))
        #expect(reply.opcode == ManagementPackets.getConnectionsOpcode && reply.index == 1 && reply.status == 0)
        let links = try #require(ManagementPackets.connections(reply.parameters))
        #expect(links == [board, ManagementPackets.Address(bytes: [0xC0, 0x01, 0x02, 0x03, 0x04, 0x05], type: 2)])
        #expect(links[1].description == "C0:01:02:03:04:05 (LE random)")
        // A count the length does not carry is refused, not read past the end.
        #expect(ManagementPackets.connections([0x02, 0x00, 0x01, 0x00, 0x01, 0x01, 0xAA, 0x00, 0x01]) == nil)
    }

    @Test func otherEventsAndShortPacketsAreNoReply() {
        // Device Disconnected (0x000C) and Command Status (0x0002) of a Disconnect refused.
        #expect(ManagementPackets.reply([0x0C, 0x00, 0x01, 0x00, 0x08, 0x00, 0x01, 0x00, 0x01, 0x01, 0xAA, 0x00, 0x01, 0x02]) == nil)
        let status = ManagementPackets.reply([0x02, 0x00, 0x01, 0x00, 0x03, 0x00, 0x14, 0x00, 0x14])
        #expect(status == ManagementPackets.Reply(opcode: 0x0014, index: 1, status: 0x14, parameters: []))
        #expect(ManagementPackets.statusName(0x14) == "permission denied")
        // The header promises 7 bytes, 3 came.
        #expect(ManagementPackets.reply([0x01, 0x00, 0x01, 0x00, 0x07, 0x00, 0x14, 0x00, 0x00]) == nil)
    }

    @Test func addressesAreReadFromTextAndFromBluetoothdsDevicePaths() {
        #expect(ManagementPackets.Address("00:aa:01:01:00:01", type: 1) == board)
        #expect(ManagementPackets.Address("00:AA:01:01:00", type: 1) == nil)
        #expect(ManagementPackets.Address("00:AA:01:01:00:GG", type: 1) == nil)
        let device: DBusObjectPath = "/org/bluez/hci1/dev_00_AA_01_01_00_01", adapter: DBusObjectPath = "/org/bluez/hci1"
        #expect(GATTPeripheral.address(ofDevice: device) == "00:AA:01:01:00:01")
        #expect(GATTPeripheral.address(ofDevice: adapter) == nil)
    }
}
