/// UTC timestamps as `YYYY-MM-DDThh:mm:ss.sssZ`, millisecond precision: the form of gpsd's
/// `time` fields, the buffer's timestamps and export.
///
/// Calendar arithmetic on integers instead of Foundation's ISO 8601 formatters: on Linux those
/// build a calendar in the current time zone and load ICU's zone tables (2-3 MB resident in an
/// always-on daemon) for a string that is always UTC.
public enum UTCTimestamp {
    /// Milliseconds since the epoch, rounded to the nearest millisecond (finite, within Int64).
    public static func string(epochMilliseconds milliseconds: Double) -> String {
        let totalMillis = Int64(milliseconds.rounded())
        let days = Int(totalMillis >= 0 ? totalMillis / 86_400_000 : (totalMillis - 86_399_999) / 86_400_000)
        let millisOfDay = Int(totalMillis - Int64(days) * 86_400_000)
        let civil = CivilDate(daysSinceEpoch: days)
        let seconds = millisOfDay / 1000
        return "\(pad(civil.year, 4))-\(pad(civil.month, 2))-\(pad(civil.day, 2))T"
            + "\(pad(seconds / 3600, 2)):\(pad(seconds / 60 % 60, 2)):\(pad(seconds % 60, 2))"
            + ".\(pad(millisOfDay % 1000, 3))Z"
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}

/// A proleptic Gregorian calendar day, converted from and to days since 1970-01-01 (Howard
/// Hinnant's civil-date algorithms, exact for every Int day).
public struct CivilDate: Hashable, Sendable {
    public var year: Int
    /// 1-12.
    public var month: Int
    /// 1-31.
    public var day: Int

    /// A day by its numbers (not checked).
    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// The day `days` after 1970-01-01.
    public init(daysSinceEpoch days: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }

    /// Days since 1970-01-01 (negative before).
    public var daysSinceEpoch: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let monthIndex = (month + 9) % 12
        let dayOfYear = (153 * monthIndex + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
