/// Builds `org.freedesktop.DBus.Introspectable` XML for an exported path.
enum Introspection {
    static let doctype = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        """

    static func xml(object: DBusExportedObject?, isObjectManager: Bool, children: [String]) -> String {
        var lines = [doctype, "<node>"]
        var interfaces = object?.interfaces ?? []
        if object != nil || isObjectManager {
            interfaces += standardInterfaces(objectManager: isObjectManager)
        } else {
            interfaces += [standardInterfaces(objectManager: false)[0]]
        }
        for interface in interfaces { lines.append(contentsOf: describe(interface)) }
        for child in children { lines.append("  <node name=\"\(escape(child))\"/>") }
        lines.append("</node>")
        return lines.joined(separator: "\n") + "\n"
    }

    private static func describe(_ interface: DBusInterface) -> [String] {
        var lines = ["  <interface name=\"\(escape(interface.name))\">"]
        for method in interface.methods {
            lines.append("    <method name=\"\(escape(method.name))\">")
            lines += arguments(method.inSignature, names: method.inNames, direction: "in")
            lines += arguments(method.outSignature, names: method.outNames, direction: "out")
            lines.append("    </method>")
        }
        for signal in interface.signals {
            lines.append("    <signal name=\"\(escape(signal.name))\">")
            lines += arguments(signal.signature, names: signal.argumentNames, direction: nil)
            lines.append("    </signal>")
        }
        for property in interface.properties {
            let annotation: String? = switch property.changeSignal {
            case .value: nil
            case .invalidates: "invalidates"
            case .none: "false"
            }
            let head = "    <property name=\"\(escape(property.name))\" type=\"\(escape(property.type.description))\" access=\"\(property.access)\""
            if let annotation {
                lines.append(head + ">")
                lines.append("      <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"\(annotation)\"/>")
                lines.append("    </property>")
            } else {
                lines.append(head + "/>")
            }
        }
        lines.append("  </interface>")
        return lines
    }

    private static func arguments(_ signature: DBusSignature, names: [String], direction: String?) -> [String] {
        signature.types.enumerated().map { index, type in
            var attributes = ""
            if index < names.count { attributes += " name=\"\(escape(names[index]))\"" }
            attributes += " type=\"\(escape(type.description))\""
            if let direction { attributes += " direction=\"\(direction)\"" }
            return "      <arg\(attributes)/>"
        }
    }

    static func escape(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&apos;"
            default: result.append(character)
            }
        }
        return result
    }

    private static let noHandler: DBusMethod.Handler = { _ in [] }

    /// Descriptions of the interfaces the connection implements itself.
    static func standardInterfaces(objectManager: Bool) -> [DBusInterface] {
        var result = [
            DBusInterface(DBusStandardInterface.introspectable, methods: [
                DBusMethod("Introspect", out: [.string], outNames: ["xml_data"], handler: noHandler),
            ]),
            DBusInterface(DBusStandardInterface.peer, methods: [
                DBusMethod("Ping", handler: noHandler),
                DBusMethod("GetMachineId", out: [.string], outNames: ["machine_uuid"], handler: noHandler),
            ]),
            DBusInterface(DBusStandardInterface.properties, methods: [
                DBusMethod("Get", in: [.string, .string], out: [.variant],
                           inNames: ["interface_name", "property_name"], outNames: ["value"], handler: noHandler),
                DBusMethod("GetAll", in: [.string], out: [.dictionary(key: .string, value: .variant)],
                           inNames: ["interface_name"], outNames: ["props"], handler: noHandler),
                DBusMethod("Set", in: [.string, .string, .variant],
                           inNames: ["interface_name", "property_name", "value"], handler: noHandler),
            ], signals: [
                DBusSignalDescription("PropertiesChanged",
                                      signature: [.string, .dictionary(key: .string, value: .variant), .array(.string)],
                                      argumentNames: ["interface_name", "changed_properties", "invalidated_properties"]),
            ]),
        ]
        if objectManager {
            result.append(DBusInterface(DBusStandardInterface.objectManager, methods: [
                DBusMethod("GetManagedObjects", out: [ObjectRegistry.managedObjectsType],
                           outNames: ["objpath_interfaces_and_properties"], handler: noHandler),
            ], signals: [
                DBusSignalDescription("InterfacesAdded",
                                      signature: [.objectPath, .dictionary(key: .string, value: .dictionary(key: .string, value: .variant))],
                                      argumentNames: ["object_path", "interfaces_and_properties"]),
                DBusSignalDescription("InterfacesRemoved", signature: [.objectPath, .array(.string)],
                                      argumentNames: ["object_path", "interfaces"]),
            ]))
        }
        return result
    }
}
