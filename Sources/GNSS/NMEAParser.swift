/// Turns checksum-verified sentence bytes into typed ``NMEASentence`` values.
///
/// Fields are read by position from left to right with a cursor; missing trailing fields
/// (older NMEA versions) read as empty and extra trailing fields (newer versions) are
/// ignored, so one code path covers NMEA 2.3 to 4.11.
public enum NMEAParser {
    /// Parses one sentence body (the bytes between `$` and `*`).
    public static func parse(_ raw: NMEARawSentence) -> NMEASentence {
        parse(body: raw.body)
    }

    /// Parses a sentence given as text, with or without `$` and `*hh`. The checksum is not
    /// verified here; use ``NMEAFramer`` for untrusted input.
    public static func parse(text: String) -> NMEASentence {
        var text = text
        return text.withUTF8 { bytes in
            var start = 0
            var end = bytes.count
            if end > 0 && bytes[0] == UInt8(ascii: "$") { start = 1 }
            if end - start >= 3 && bytes[end - 3] == UInt8(ascii: "*") { end -= 3 }
            return parse(body: UnsafeBufferPointer(rebasing: bytes[start..<end]))
        }
    }

    /// Parses the bytes between `$` and `*`.
    public static func parse(body: UnsafeBufferPointer<UInt8>) -> NMEASentence {
        var cursor = NMEAFieldCursor(body)
        let address = cursor.next()
        guard address.count >= 1 else { return .unsupported }
        if address[0] == UInt8(ascii: "P") { return .proprietary }
        guard address.count == 5 else { return .unsupported }
        let talker = NMEATalker(address[0], address[1])
        let type = UInt32(address[2]) << 16 | UInt32(address[3]) << 8 | UInt32(address[4])
        switch type {
        case 0x524D43: return .rmc(rmc(&cursor, talker))  // RMC
        case 0x474741: return .gga(gga(&cursor, talker))  // GGA
        case 0x475341: return .gsa(gsa(&cursor, talker))  // GSA
        case 0x475356: return .gsv(gsv(&cursor, talker))  // GSV
        case 0x565447: return .vtg(vtg(&cursor, talker))  // VTG
        case 0x474C4C: return .gll(gll(&cursor, talker))  // GLL
        case 0x474E53: return .gns(gns(&cursor, talker))  // GNS
        case 0x5A4441: return .zda(zda(&cursor, talker))  // ZDA
        case 0x475354: return .gst(gst(&cursor, talker))  // GST
        case 0x545854: return .txt(txt(&cursor, talker))  // TXT
        default: return .unsupported
        }
    }

    private static func rmc(_ c: inout NMEAFieldCursor, _ talker: NMEATalker) -> NMEASentence.RMC {
        let time = c.next().timeOfDay
        let status = c.next().character
        let latitude = c.next()
        let north = c.next()
        let longitude = c.next()
        let east = c.next()
        let speed = c.next().nonNegativeDecimal
        let course = c.next().decimal
        let date = ddmmyy(c.next())
        let variation = c.next().decimal
        let variationSide = c.next().character
        let mode = c.next().character.flatMap(FAAMode.init(rawValue:))
        let navStatus = c.next().character
        return .init(
            talker: talker, time: time, isValid: status == UInt8(ascii: "A"),
            latitude: latitude.coordinate(hemisphere: north, isLatitude: true),
            longitude: longitude.coordinate(hemisphere: east, isLatitude: false),
            speedKnots: speed, courseTrue: course, date: date,
            magneticVariation: variation.map { variationSide == UInt8(ascii: "W") ? -$0 : $0 },
            mode: mode, navigationalStatus: navStatus)
    }

    private static func gga(_ c: inout NMEAFieldCursor, _ talker: NMEATalker) -> NMEASentence.GGA {
        let time = c.next().timeOfDay
        let latitude = c.next()
        let north = c.next()
        let longitude = c.next()
        let east = c.next()
        let quality = c.next().integer
        let satellites = c.next().integer
        let hdop = c.next().nonNegativeDecimal
        let altitude = c.next().decimal
        c.skip(1)
        let separation = c.next().decimal
        c.skip(1)
        let age = c.next().decimal
        return .init(
            talker: talker, time: time,
            latitude: latitude.coordinate(hemisphere: north, isLatitude: true),
            longitude: longitude.coordinate(hemisphere: east, isLatitude: false),
            quality: quality, satellitesUsed: satellites, hdop: hdop, altitudeMSL: altitude,
            geoidSeparation: separation, dgpsAge: age)
    }

    private static func gsa(_ c: inout NMEAFieldCursor, _ talker: NMEATalker) -> NMEASentence.GSA {
        let selection = c.next().character
        let mode = c.next().integer
        var used = 0
        for _ in 0..<12 where !c.next().isEmpty { used += 1 }
        let pdop = c.next().nonNegativeDecimal
        let hdop = c.next().nonNegativeDecimal
        let vdop = c.next().nonNegativeDecimal
        let system = c.next().integer.flatMap { GNSSSystem(rawValue: UInt8(truncatingIfNeeded: $0)) }
        return .init(
            talker: talker, selection: selection, fixMode: mode, satellitesUsed: used,
            pdop: pdop, hdop: hdop, vdop: vdop, system: system)
    }

    private static func gsv(_ c: inout NMEAFieldCursor, _ talker: NMEATalker) -> NMEASentence.GSV {
        let total = c.next().integer
        let number = c.next().integer
        let inView = c.next().integer
        var sentence = NMEASentence.GSV(
            talker: talker, totalMessages: total, messageNumber: number,
            satellitesInView: inView, satellites: (nil, nil, nil, nil), signalID: nil)
        // Four satellite blocks of four fields; a fifth field group of one is the signal ID.
        for slot in 0..<4 {
            guard c.hasMore else { break }
            let prnField = c.next()
            if !c.hasMore && slot > 0 {
                sentence.signalID = prnField.integer
                break
            }
            let elevation = c.next().integer.map { Int16(truncatingIfNeeded: $0) }
            let azimuth = c.next().integer.map { Int16(truncatingIfNeeded: $0) }
            let snr = c.next().integer.map { Int16(truncatingIfNeeded: $0) }
            guard let prn = prnField.integer.map({ Int16(truncatingIfNeeded: $0) }) else { continue }
            let satellite = NMEASentence.GSV.Satellite(
                prn: prn, elevation: elevation, azimuth: azimuth, snr: snr)
            switch slot {
            case 0: sentence.satellites.0 = satellite
            case 1: sentence.satellites.1 = satellite
            case 2: sentence.satellites.2 = satellite
            default: sentence.satellites.3 = satellite
            }
        }
        if c.hasMore { sentence.signalID = c.next().integer }
        return sentence
    }

    private static func vtg(_ c: inout NMEAFieldCursor, _ talker: NMEATalker) -> NMEASentence.VTG {
        let first = c.next()
        let second = c.next()
        if second.character == UInt8(ascii: "T") {
            // NMEA 3.01+: value,unit pairs.
            let magnetic = c.next()
            c.skip(1)
            let knots = c.next()
            c.skip(1)
            let kmh = c.next()
            c.skip(1)
            let mode = c.next().character.flatMap(FAAMode.init(rawValue:))
            return .init(
                talker: talker, courseTrue: first.decimal, courseMagnetic: magnetic.decimal,
                speedKnots: knots.nonNegativeDecimal, speedKmh: kmh.nonNegativeDecimal, mode: mode)
        }
        // Pre-3.01 form: course true, course magnetic, knots, km/h, without unit letters.
        let knots = c.next()
        let kmh = c.next()
        return .init(
            talker: talker, courseTrue: first.decimal, courseMagnetic: second.decimal,
            speedKnots: knots.nonNegativeDecimal, speedKmh: kmh.nonNegativeDecimal, mode: nil)
    }

    private static func gll(_ c: inout NMEAFieldCursor, _ talker: NMEATalker) -> NMEASentence.GLL {
        let latitude = c.next()
        let north = c.next()
        let longitude = c.next()
        let east = c.next()
        let time = c.next().timeOfDay
        let status = c.next().character
        let mode = c.next().character.flatMap(FAAMode.init(rawValue:))
        return .init(
            talker: talker,
            latitude: latitude.coordinate(hemisphere: north, isLatitude: true),
            longitude: longitude.coordinate(hemisphere: east, isLatitude: false),
            time: time, isValid: status == UInt8(ascii: "A"), mode: mode)
    }

    private static func gns(_ c: inout NMEAFieldCursor, _ talker: NMEATalker) -> NMEASentence.GNS {
        let time = c.next().timeOfDay
        let latitude = c.next()
        let north = c.next()
        let longitude = c.next()
        let east = c.next()
        let modes = c.next()
        var anyValid = false
        var bestMode: FAAMode?
        for offset in 0..<modes.count {
            guard let mode = FAAMode(rawValue: modes[offset]) else { continue }
            if mode.isUsable { anyValid = true }
            if mode.rank > (bestMode?.rank ?? -1) { bestMode = mode }
        }
        let satellites = c.next().integer
        let hdop = c.next().nonNegativeDecimal
        let altitude = c.next().decimal
        let separation = c.next().decimal
        c.skip(2)
        let navStatus = c.next().character
        return .init(
            talker: talker, time: time,
            latitude: latitude.coordinate(hemisphere: north, isLatitude: true),
            longitude: longitude.coordinate(hemisphere: east, isLatitude: false),
            anySystemValid: anyValid, bestMode: bestMode, systemCount: modes.count, satellitesUsed: satellites,
            hdop: hdop, altitudeMSL: altitude, geoidSeparation: separation,
            navigationalStatus: navStatus)
    }

    private static func zda(_ c: inout NMEAFieldCursor, _ talker: NMEATalker) -> NMEASentence.ZDA {
        let time = c.next().timeOfDay
        let day = c.next().integer
        let month = c.next().integer
        let year = c.next()
        let zoneHours = c.next().decimal.map { Int($0) }
        let zoneMinutes = c.next().integer
        var date: NMEADate?
        if let day, let month, year.count == 4, let year = year.integer {
            date = NMEADate(year: year, month: month, day: day)
        }
        return .init(
            talker: talker, time: time, date: date, zoneHours: zoneHours, zoneMinutes: zoneMinutes)
    }

    private static func gst(_ c: inout NMEAFieldCursor, _ talker: NMEATalker) -> NMEASentence.GST {
        .init(
            talker: talker, time: c.next().timeOfDay, rangeRMS: c.next().nonNegativeDecimal,
            semiMajor: c.next().nonNegativeDecimal, semiMinor: c.next().nonNegativeDecimal,
            orientation: c.next().decimal, latitudeSigma: c.next().nonNegativeDecimal,
            longitudeSigma: c.next().nonNegativeDecimal, altitudeSigma: c.next().nonNegativeDecimal)
    }

    private static func txt(_ c: inout NMEAFieldCursor, _ talker: NMEATalker) -> NMEASentence.TXT {
        .init(
            talker: talker, totalMessages: c.next().integer, messageNumber: c.next().integer,
            identifier: c.next().integer, text: c.next())
    }

    /// `ddmmyy` with the two-digit year as sent; the assembler picks the century.
    private static func ddmmyy(_ field: NMEAField) -> NMEADate? {
        guard field.count == 6, let day = field.twoDigits(at: 0),
            let month = field.twoDigits(at: 2), let year = field.twoDigits(at: 4)
        else { return nil }
        return NMEADate(year: year, month: month, day: day)
    }
}
