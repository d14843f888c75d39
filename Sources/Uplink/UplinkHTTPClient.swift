import AsyncHTTPClient
import NIOCore

extension HTTPClient {
    /// The HTTP client the sinks use by default: it fails a request as soon as its connection
    /// cannot be made (refused, unreachable, no route; connect timeout 15 s). AsyncHTTPClient's
    /// shared client instead retries connecting until the request's deadline, so an upstream
    /// that is down held every upload attempt for the whole 60 s deadline with no error to
    /// report; failing fast hands the retry to the sync's own backoff and makes the outage
    /// visible (`sync-failing`, `mwctl sync`) at once. Never shut down, like `.shared`.
    public static let uplink: HTTPClient = {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.timeout = .init(connect: .seconds(15), read: .seconds(90))
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()
}
