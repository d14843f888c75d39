#!/usr/bin/env python3
"""Writes the man page of mwctl(1) or mwgated(8) in roff from the program's own parser
description (`--experimental-dump-help`), so the page always matches the options.
Usage: gen-man.py MWCTL > mwctl.1 ; gen-man.py MWGATED > mwgated.8"""
import datetime, json, os, subprocess, sys


def esc(text):
    text = (text or "").replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line.startswith((".", "'")) else line for line in text.split("\n"))


def option_label(arg):
    names = []
    for n in arg.get("names", []):
        names.append(("-" if n["kind"] == "short" else "--") + n["name"])
    if arg["kind"] == "positional":
        return "\\fI" + esc(arg.get("valueName", "value")) + "\\fR"
    label = ", ".join("\\fB" + esc(n) + "\\fR" for n in names)
    if arg["kind"] == "option":
        label += " \\fI" + esc(arg.get("valueName", "value")) + "\\fR"
    return label


def command(cmd, path, out):
    name = " ".join(path)
    visible = [a for a in cmd.get("arguments", []) if a.get("shouldDisplay", True)
               and a.get("valueName") not in ("help", "version")]
    subs = [s for s in cmd.get("subcommands", []) if s.get("shouldDisplay", True)]
    if len(path) > 1:
        out.append(".SS " + esc(name))
        out.append(esc(cmd.get("abstract", "")))
        if cmd.get("discussion"):
            out.append(".PP")
            out.append(esc(cmd["discussion"]))
        for arg in visible:
            out.append(".TP")
            out.append(option_label(arg))
            text = arg.get("abstract", "")
            if arg.get("defaultValue"):
                text += " (default: %s)" % arg["defaultValue"]
            out.append(esc(text))
    for sub in subs:
        command(sub, path + [sub["commandName"]], out)


# What the parser cannot say: sections per program, as (heading, [(term, text), ...]).
PAGES = {
    "mwctl": {
        "section": 1,
        "synopsis": "\\fIcommand\\fR [\\fIoptions\\fR]",
        "commands": True,
        "extra": [
            ("ENVIRONMENT", [("\\fBDBUS_SYSTEM_BUS_ADDRESS\\fR",
                              "The system bus to use (default unix:path=/run/dbus/system_bus_socket).")]),
        ],
        "see_also": "mwgated(8), busctl(1); docs/control-api.md",
    },
    "mwgated": {
        "section": 8,
        "synopsis": "[\\fIoptions\\fR]",
        "commands": False,
        "extra": [
            ("SIGNALS", [
                ("\\fBSIGTERM\\fR, \\fBSIGINT\\fR",
                 "Stop: open chunks are sealed and the buffer is closed before exit (status 0)."),
                ("\\fBSIGHUP\\fR",
                 "Re-read the configuration; an invalid file is rejected as a whole and the running one kept "
                 "(systemctl reload mwgated)."),
            ]),
            ("EXIT STATUS", [
                ("0", "Stopped by a signal, or --check-config found the configuration valid."),
                ("1", "The gateway could not start (BlueZ, the buffer, the state directory)."),
                ("78", "The configuration has errors (EX_CONFIG), each printed as file:line: key: message."),
            ]),
            ("ENVIRONMENT", [
                ("\\fBCONFIGURATION_DIRECTORY\\fR", "Where mwgated.toml is looked for (systemd sets it; else /etc/mwgate)."),
                ("\\fBSTATE_DIRECTORY\\fR", "The buffer database and device identity (default /var/lib/mwgate)."),
                ("\\fBCREDENTIALS_DIRECTORY\\fR", "Upstream secrets passed as systemd credentials (LoadCredential=)."),
                ("\\fBNOTIFY_SOCKET\\fR, \\fBWATCHDOG_USEC\\fR", "sd_notify readiness, status and watchdog."),
                ("\\fBDBUS_SYSTEM_BUS_ADDRESS\\fR", "BlueZ's bus and the control API's (default: the system bus)."),
            ]),
            ("FILES", [
                ("/etc/mwgate/mwgated.toml", "The configuration (every key optional)."),
                ("/var/lib/mwgate/", "The SQLite buffer: local data is the source of truth until synced."),
            ]),
        ],
        "see_also": "mwctl(1), systemctl(1), journalctl(1); /usr/share/doc/mwgate/operations.md, configuration.md",
    },
}


def main():
    binary = sys.argv[1]
    name = os.path.basename(binary)
    page = PAGES.get(name)
    if page is None:
        sys.exit("gen-man.py: no page description for %s (known: %s)" % (name, ", ".join(PAGES)))
    root = json.loads(subprocess.check_output([binary, "--experimental-dump-help"]))["command"]
    out = ['.TH %s %d "%s" "mwgate" "mwgate manual"' % (name.upper(), page["section"], datetime.date.today().isoformat()),
           ".SH NAME", name + " \\- " + esc(root.get("abstract", "")),
           ".SH SYNOPSIS", ".B " + name, page["synopsis"],
           ".SH DESCRIPTION", esc(root.get("discussion", ""))]
    if page["commands"]:
        out.append(".SH COMMANDS")
        command(root, [name], out)
    else:
        out.append(".SH OPTIONS")
        for arg in [a for a in root.get("arguments", []) if a.get("shouldDisplay", True)
                    and a.get("valueName") not in ("help", "version")]:
            out += [".TP", option_label(arg), esc(arg.get("abstract", ""))]
    for heading, entries in page["extra"]:
        out.append(".SH " + heading)
        for term, text in entries:
            out += [".TP", term, esc(text)]
    out += [".SH SEE ALSO", page["see_also"]]
    sys.stdout.write("\n".join(out) + "\n")


main()
