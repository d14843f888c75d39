import Basics
import Testing

/// A bounded stream's gauge: the most it held (its high-water mark) and what it refused.
struct StreamGaugeTests {
    @Test func theHighWaterMarkIsTheMostTheStreamHeldAndAFullStreamCountsWhatItRefused() async {
        let gauge = StreamGauge(name: "test", capacity: 4)
        let (stream, continuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingOldest(gauge.capacity))
        for value in 0..<6 { gauge.record(continuation.yield(value)) }
        #expect(gauge.reading == StreamGauge.Reading(highWater: 4, dropped: 2))
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next() == 0)
        #expect(await iterator.next() == 1)
        gauge.record(continuation.yield(6))
        #expect(gauge.reading == StreamGauge.Reading(highWater: 4, dropped: 2), "3 held now, 4 at most")
        continuation.finish()
        gauge.record(continuation.yield(7))
        #expect(gauge.reading.dropped == 2, "a finished stream's refusal is not a drop")
    }

    @Test func aThrowingStreamIsMeasuredTheSameWay() {
        let gauge = StreamGauge(name: "fixes", capacity: 2)
        let (stream, continuation) = AsyncThrowingStream<Int, any Error>.makeStream(bufferingPolicy: .bufferingOldest(gauge.capacity))
        defer { withExtendedLifetime(stream) {} }
        for value in 0..<3 { gauge.record(continuation.yield(value)) }
        #expect(gauge.reading == StreamGauge.Reading(highWater: 2, dropped: 1))
    }
}
