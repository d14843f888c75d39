extension Duration {
    /// Whole milliseconds (the rest dropped), for log lines and status fields.
    public var roundedMilliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}
