import Basics
import Synchronization
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A set-once flag shared between a consumer and a reader thread.
final class StopFlag: Sendable {
    private let stopped = Atomic(false)

    var isStopped: Bool { stopped.load(ordering: .acquiring) }
    func stop() { stopped.store(true, ordering: .releasing) }
}

/// An open descriptor plus bytes the opener already read while probing it.
struct OpenedStream {
    var descriptor: Int32
    var initialBytes: [UInt8] = []
}

/// Reads a descriptor on its own thread (blocking reads must not occupy the cooperative
/// pool), decodes it and yields fixes; reopens it with exponential backoff when it fails.
extension GNSSFix {
    /// The serial and gpsd sources' fix streams (every source's counts here): 16,384 fixes,
    /// half an hour at a receiver's 10 fixes a second. A source read faster than real time
    /// (gpsd replaying a log, a burst after a stall) outran 1,024 while its reader was busy:
    /// 476 of 1,500 fixes dropped in the gpsd fuzz test on a loaded machine.
    public static let streamGauge = StreamGauge(name: "gnss_fixes", capacity: 16_384)
}

enum ByteStreamPump {
    static var fixGauge: StreamGauge { GNSSFix.streamGauge }
    static func start(
        name: String, configuration: FixSourceConfiguration,
        open: @escaping @Sendable () throws -> OpenedStream
    ) -> AsyncThrowingStream<GNSSFix, any Error> {
        let (stream, continuation) = AsyncThrowingStream<GNSSFix, any Error>.makeStream(
            bufferingPolicy: .bufferingOldest(fixGauge.capacity))
        let stop = StopFlag()
        continuation.onTermination = { _ in stop.stop() }
        do {
            try DetachedThread.start(name: "gnss \(name)") {
                run(name: name, configuration: configuration, open: open, stop: stop,
                    continuation: continuation)
            }
        } catch {
            continuation.finish(throwing: FixSourceError("\(error)"))
        }
        return stream
    }

    private static func run(
        name: String, configuration: FixSourceConfiguration,
        open: @Sendable () throws -> OpenedStream, stop: StopFlag,
        continuation: AsyncThrowingStream<GNSSFix, any Error>.Continuation
    ) {
        func report(_ message: String) {
            configuration.events?(FixSourceEvent(source: name, message: message))
        }
        var backoff = configuration.initialBackoff
        while !stop.isStopped {
            let opened: OpenedStream
            do {
                opened = try open()
            } catch {
                guard configuration.reconnects else {
                    continuation.finish(throwing: error)
                    return
                }
                report("\(error); retrying in \(backoff.formattedSeconds)")
                sleep(backoff, unless: stop)
                backoff = min(backoff * 2, configuration.maximumBackoff)
                continue
            }
            backoff = configuration.initialBackoff
            report("connected")
            let reason = pump(opened, configuration: configuration, stop: stop, continuation: continuation)
            close(opened.descriptor)
            if stop.isStopped { break }
            guard configuration.reconnects else {
                continuation.finish()
                return
            }
            report("\(reason); reconnecting")
            sleep(backoff, unless: stop)
        }
        continuation.finish()
    }

    /// Reads until the stream ends or fails; returns why.
    private static func pump(
        _ opened: OpenedStream, configuration: FixSourceConfiguration, stop: StopFlag,
        continuation: AsyncThrowingStream<GNSSFix, any Error>.Continuation
    ) -> String {
        var decoder = NMEADecoder(options: configuration.assembler)
        let emit: (GNSSFix) -> Void = { fixGauge.record(continuation.yield($0)) }
        if !opened.initialBytes.isEmpty {
            decoder.feed(opened.initialBytes, arrival: Date(), emit: emit)
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var quiet = Duration.zero
        let pollInterval = Duration.milliseconds(200)
        var flushed = true
        while !stop.isStopped {
            var descriptor = pollfd(fd: opened.descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 200)
            if ready < 0 {
                if errno == EINTR { continue }
                return "poll failed: \(String(cString: strerror(errno)))"
            }
            if ready == 0 {
                quiet += pollInterval
                if !flushed && quiet >= configuration.quietFlush {
                    decoder.flush(emit: emit)
                    flushed = true
                }
                if let limit = configuration.silenceReconnect, quiet >= limit {
                    return "no data for \(limit.components.seconds) s"
                }
                continue
            }
            let count = buffer.withUnsafeMutableBytes { read(opened.descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                quiet = .zero
                flushed = false
                let arrival = Date()
                buffer.withUnsafeBytes { bytes in
                    decoder.feed(UnsafeRawBufferPointer(rebasing: bytes[0..<count]), arrival: arrival, emit: emit)
                }
                continue
            }
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            let reason = count == 0 ? "end of stream" : "read failed: \(String(cString: strerror(errno)))"
            decoder.finish(arrival: Date(), emit: emit)
            return reason
        }
        return "stopped"
    }

    /// Sleeps in short slices so a stop request is honoured quickly.
    static func sleep(_ duration: Duration, unless stop: StopFlag) {
        var left = duration
        let slice = Duration.milliseconds(50)
        while left > .zero && !stop.isStopped {
            let step = min(left, slice)
            usleep(UInt32(step.microseconds))
            left -= step
        }
    }
}

extension Duration {
    var microseconds: Int64 {
        components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000
    }
    var formattedSeconds: String {
        let millis = microseconds / 1000
        return millis < 1000 ? "\(millis) ms" : "\(millis / 1000).\(millis % 1000 / 100) s"
    }
}

/// An I/O failure with the call and path that failed.
public struct FixSourceError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }

    static func posix(_ what: String) -> FixSourceError {
        FixSourceError("\(what): \(String(cString: strerror(errno)))")
    }
}
