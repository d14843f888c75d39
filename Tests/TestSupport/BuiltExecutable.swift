import Foundation

/// The repository's executables as `swift build --build-tests` leaves them beside the test bundle.
public enum BuiltExecutable {
    /// The path of the built executable `name` (e.g. `mwctl`), or an error saying how to build it.
    public static func path(_ name: String) throws -> String {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
            Bundle.main.bundleURL.deletingLastPathComponent(),
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.build/debug"),
        ]
        for directory in candidates {
            var candidate = directory
            for _ in 0..<4 {
                let file = candidate.appendingPathComponent(name)
                if FileManager.default.isExecutableFile(atPath: file.path) { return file.path }
                candidate = candidate.deletingLastPathComponent()
            }
        }
        throw TestBusError(message: "\(name) not found beside the test bundle (swift build --build-tests builds it)")
    }
}
