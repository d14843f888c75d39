#!/bin/sh
# Runs the scenario group named in /scenario/group inside the VM.
set -a; . /scenario/environment; set +a
exec python3 /scenario/scenario.py "$(cat /scenario/group)"
