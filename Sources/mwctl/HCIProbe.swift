#if canImport(Glibc)
import Glibc
#endif

/// Adapter facts straight from the kernel's HCI layer (what libbluetooth's `hci_get_route`
/// and `hci_devinfo` do: the HCIGETDEVLIST and HCIGETDEVINFO ioctls on a raw HCI socket,
/// which need no capability). Written here instead of linking the GPL libbluetooth.
enum HCIProbe {
    struct Adapter: Encodable {
        var name: String
        var address: String
        var up: Bool
    }

    enum Outcome {
        case adapters([Adapter])
        /// The socket or ioctl failed; `errno` and what it means.
        case unavailable(errno: Int32, reason: String)
    }

    private static let afBluetooth: Int32 = 31
    private static let btprotoHCI: Int32 = 1
    // _IOR('H', 210, int) and _IOR('H', 211, int).
    private static let getDeviceList: UInt = 0x8004_48D2
    private static let getDeviceInfo: UInt = 0x8004_48D3
    private static let maximumDevices = 16

    /// glibc's `ioctl` is variadic, which Swift cannot call; it is looked up by name and
    /// called with the one pointer argument these requests take.
    private typealias IoctlPointer = @convention(c) (Int32, UInt, UnsafeMutableRawPointer?) -> Int32
    private static let ioctlFunction: IoctlPointer? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "ioctl") else { return nil }
        return unsafeBitCast(symbol, to: IoctlPointer.self)
    }()

    static func probe() -> Outcome {
        guard let ioctl = ioctlFunction else { return .unavailable(errno: 0, reason: "ioctl is not available") }
        let fd = socket(afBluetooth, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), btprotoHCI)
        guard fd >= 0 else {
            let code = errno
            let reason = code == EAFNOSUPPORT
                ? "the kernel has no Bluetooth support here (socket(AF_BLUETOOTH) failed with EAFNOSUPPORT): load the bluetooth module or use a machine with a controller"
                : "cannot open an HCI socket: \(String(cString: strerror(code)))"
            return .unavailable(errno: code, reason: reason)
        }
        defer { close(fd) }
        // struct hci_dev_list_req { uint16_t dev_num; struct hci_dev_req { uint16_t id; uint32_t opt; } [] }
        var list = [UInt8](repeating: 0, count: 4 + 8 * maximumDevices)
        list[0] = UInt8(maximumDevices)
        let listed = list.withUnsafeMutableBytes { ioctl(fd, getDeviceList, $0.baseAddress) }
        guard listed >= 0 else {
            return .unavailable(errno: errno, reason: "HCIGETDEVLIST failed: \(String(cString: strerror(errno)))")
        }
        let count = Int(list[0]) | Int(list[1]) << 8
        var adapters: [Adapter] = []
        for index in 0..<min(count, maximumDevices) {
            let base = 4 + 8 * index
            let id = UInt16(list[base]) | UInt16(list[base + 1]) << 8
            // struct hci_dev_info: dev_id u16, name char[8], bdaddr 6 bytes (reversed), flags u32 at 16.
            var info = [UInt8](repeating: 0, count: 128)
            info[0] = UInt8(id & 0xFF)
            info[1] = UInt8(id >> 8)
            let got = info.withUnsafeMutableBytes { ioctl(fd, getDeviceInfo, $0.baseAddress) }
            guard got >= 0 else { continue }
            let name = String(decoding: info[2..<10].prefix { $0 != 0 }, as: UTF8.self)
            let address = info[10..<16].reversed().map { byte in
                let hex = String(byte, radix: 16, uppercase: true)
                return hex.count == 1 ? "0" + hex : hex
            }.joined(separator: ":")
            let flags = UInt32(info[16]) | UInt32(info[17]) << 8 | UInt32(info[18]) << 16 | UInt32(info[19]) << 24
            adapters.append(Adapter(name: name, address: address, up: flags & 1 != 0))
        }
        return .adapters(adapters)
    }
}
