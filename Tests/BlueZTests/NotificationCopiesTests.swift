@testable import BlueZ
import Testing

/// bluetoothd 5.66 signals one StartNotify notification once per notify client, back to back
/// (consecutive serials, same bytes): what the gateway takes as notifications.
struct NotificationCopiesTests {
    /// Feeds `signals` (bytes per signal, serials consecutive from `firstSerial` unless a
    /// serial is given) and returns the bytes taken as notifications.
    private func notifications(_ signals: [(UInt32?, [UInt8])], firstSerial: UInt32 = 100,
                               filter: inout NotificationCopies) -> [[UInt8]] {
        var serial = firstSerial
        var taken: [[UInt8]] = []
        for (given, bytes) in signals {
            serial = given ?? serial &+ 1
            if filter.isNotification(serial: serial, bytes: bytes) { taken.append(bytes) }
        }
        return taken
    }

    private func copies(_ values: [UInt8], each count: Int) -> [(UInt32?, [UInt8])] {
        values.flatMap { value in Array(repeating: (UInt32?.none, [0x13, 0x05, value]), count: count) }
    }

    @Test func withOneClientEverySignalIsANotificationEvenRepeatedBytes() {
        var filter = NotificationCopies()
        let values: [UInt8] = [1, 2, 2, 2, 3, 4, 4, 5]
        let taken = notifications(copies(values, each: 1), filter: &filter)
        #expect(taken.map { $0[2] } == values)
        #expect(filter.copies == 1)
    }

    @Test func twoClientsGiveEachNotificationOnceAndKeepTheBoardsOwnRepeats() {
        var filter = NotificationCopies()
        // The board sends 7 twice and 9 three times in a row; bluetoothd doubles everything.
        let values: [UInt8] = [1, 2, 3, 7, 7, 8, 9, 9, 9, 10, 11]
        let taken = notifications(copies(values, each: 2), filter: &filter)
        // The very first notification is taken twice: nothing tells the count before one run ended.
        #expect(taken.map { $0[2] } == [1] + values)
        #expect(filter.copies == 2)
    }

    @Test func threeClientsAndAClientLeaving() {
        var filter = NotificationCopies()
        var taken = notifications(copies([1, 2, 3, 4, 4, 5], each: 3), filter: &filter)
        #expect(filter.copies == 3)
        // Two clients leave: from the first single signal on, every signal counts again.
        taken += notifications(copies([6, 7, 7, 8], each: 1), firstSerial: 500, filter: &filter)
        #expect(filter.copies == 1)
        // The first notification is taken three times (no run had ended yet), then exactly.
        #expect(taken.map { $0[2] } == [1, 1, 1, 2, 3, 4, 4, 5, 6, 7, 7, 8])
    }

    @Test func aSerialGapEndsARun() {
        var filter = NotificationCopies()
        _ = notifications(copies([1, 2, 3], each: 2), filter: &filter)
        #expect(filter.copies == 2)
        // The same bytes again but not the next message of bluetoothd's: another notification.
        let taken = notifications([(1000, [0x13, 0x05, 3]), (1001, [0x13, 0x05, 3])], filter: &filter)
        #expect(taken.count == 1)
        let again = notifications([(1005, [0x13, 0x05, 3]), (1006, [0x13, 0x05, 3])], filter: &filter)
        #expect(again.count == 1)
    }
}
