// mwbench: the release-build benchmarks behind `make bench`. Each area lives in its own
// file and prints Markdown table rows plus machine-readable `key=value` lines.
import Foundation

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let area = arguments.first else {
    fail("usage: mwbench backfill|boards|reconnect|control|dbus|gnss|metawear|recording|uplink|wakefloor|handofffloor [options]")
}
let rest = Array(arguments.dropFirst())
switch area {
case "boards": await BoardsBenchmark.run(rest)
case "reconnect": await ReconnectBenchmark.run(rest)
case "dbus": await DBusBenchmark.run(rest)
case "gnss": GNSSBenchmark.run(rest)
case "metawear": MetaWearBenchmark.run(rest)
case "backfill": BackfillBenchmark.run(rest)
case "recording": RecordingBenchmark.run(rest)
case "control": await ControlBenchmark.run(rest)
case "uplink": await UplinkBenchmark.run(rest)
case "wakefloor": WakeFloorBenchmark.run(rest)
case "handofffloor": await HandoffFloorBenchmark.run(rest)
default:
    fail("mwbench: unknown area '\(area)' (expected backfill, boards, reconnect, control, dbus, gnss, metawear, recording, uplink, wakefloor or handofffloor)")
}
