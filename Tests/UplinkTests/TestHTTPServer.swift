import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A request as the test server saw it.
struct TestRequest: Sendable {
    var method: String
    var uri: String
    var headers: [(String, String)]
    var body: String
    func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
}

/// What the test server does with a request.
enum TestResponse: Sendable {
    /// Answer with this status, headers and body.
    case reply(status: Int, headers: [(String, String)], body: String)
    /// Close the connection without answering.
    case drop
}

/// A small HTTP/1.1 server on loopback whose behaviour is a closure: used as a fake token
/// endpoint, a fake upstream, and (with `forward`) a fault-injecting proxy.
final class TestHTTPServer: Sendable {
    let port: Int
    private let channel: any Channel

    init(handler: @escaping @Sendable (TestRequest) async -> TestResponse) async throws {
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(RequestHandler(handler: handler))
                }
            }
        channel = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress?.port ?? 0
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    func stop() async { try? await channel.close() }

    /// Forwards a request to `upstream` (e.g. "http://127.0.0.1:8080") and returns the
    /// upstream's answer (nil when it could not be reached).
    static func forward(_ r: TestRequest, to upstream: String) async -> (status: Int, headers: [(String, String)], body: String)? {
        var request = HTTPClientRequest(url: upstream + r.uri)
        request.method = HTTPMethod(rawValue: r.method)
        for (k, v) in r.headers where !["host", "content-length", "connection"].contains(k.lowercased()) { request.headers.add(name: k, value: v) }
        request.body = .bytes(ByteBuffer(string: r.body))
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
            let body = try await response.body.collect(upTo: 64 << 20)
            return (Int(response.status.code), response.headers.filter { $0.name.lowercased() != "content-length" && $0.name.lowercased() != "transfer-encoding" }.map { ($0.name, $0.value) },
                    String(buffer: body))
        } catch {
            return nil
        }
    }
}

private final class RequestHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let handler: @Sendable (TestRequest) async -> TestResponse
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()

    init(handler: @escaping @Sendable (TestRequest) async -> TestResponse) { self.handler = handler }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case let .head(h):
            head = h
            body.clear()
        case var .body(b):
            body.writeBuffer(&b)
        case .end:
            guard let head else { return }
            let request = TestRequest(method: head.method.rawValue, uri: head.uri, headers: head.headers.map { ($0.name, $0.value) },
                                      body: String(buffer: body))
            let loop = context.eventLoop
            let bound = NIOLoopBound(context, eventLoop: loop)
            let handler = self.handler
            let keepAlive = head.isKeepAlive
            Task {
                let response = await handler(request)
                loop.execute {
                    let context = bound.value
                    switch response {
                    case .drop:
                        context.close(promise: nil)
                    case let .reply(status, headers, body):
                        var h = HTTPHeaders(headers)
                        h.replaceOrAdd(name: "Content-Length", value: "\(body.utf8.count)")
                        if !keepAlive { h.replaceOrAdd(name: "Connection", value: "close") }
                        context.write(self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: h))), promise: nil)
                        context.write(self.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
                        context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
                        if !keepAlive { context.close(promise: nil) }
                    }
                }
            }
        }
    }
}
