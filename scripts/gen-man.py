#!/usr/bin/env python3
"""Writes mwctl(1) in roff from the parser's own description (`mwctl --experimental-dump-help`),
so the man page always matches the commands. Usage: gen-man.py MWCTL > mwctl.1"""
import datetime, json, subprocess, sys


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


def main():
    binary = sys.argv[1]
    root = json.loads(subprocess.check_output([binary, "--experimental-dump-help"]))["command"]
    out = ['.TH MWCTL 1 "%s" "mwgate" "mwgate manual"' % datetime.date.today().isoformat(),
           ".SH NAME", "mwctl \\- " + esc(root.get("abstract", "")),
           ".SH SYNOPSIS", ".B mwctl", "\\fIcommand\\fR [\\fIoptions\\fR]",
           ".SH DESCRIPTION", esc(root.get("discussion", "")),
           ".SH COMMANDS"]
    command(root, ["mwctl"], out)
    out += [".SH ENVIRONMENT", ".TP", "\\fBDBUS_SYSTEM_BUS_ADDRESS\\fR",
            "The system bus to use (default unix:path=/run/dbus/system_bus_socket).",
            ".SH SEE ALSO", "mwgated(8), busctl(1); docs/control-api.md"]
    sys.stdout.write("\n".join(out) + "\n")


main()
