/// Test helper: "13 05 0A 00" → bytes. Traps only on malformed literals in test code.
func hex(_ text: String) -> [UInt8] {
    text.split(separator: " ").map { UInt8($0, radix: 16)! }
}

func hexLines(_ lines: [String]) -> [[UInt8]] { lines.map(hex) }
