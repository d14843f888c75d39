import DBus

extension BlueZSimulator {
    /// A method whose body says when bluetoothd answers: at once, or later while the calls
    /// after it are handled (bluetoothd answers a Connect or an acknowledged write from a
    /// callback, its main loop long since on to the next call).
    func answeringMethod(_ name: String, in inSignature: DBusSignature = .empty, out outSignature: DBusSignature = .empty,
                         inNames: [String] = [], outNames: [String] = [],
                         _ body: @escaping @Sendable (BlueZSimulator, DBusMethodCall) async throws -> DBusMethodResult) -> DBusMethod {
        DBusMethod(name, in: inSignature, out: outSignature, inNames: inNames, outNames: outNames) { [weak self] call in
            guard let self else { throw DBusError.disconnected() }
            if configuration.logsCalls { log("mwsim: call \(name) \(call.path) from \(call.sender)") }
            return try await body(self, call)
        }
    }
}
