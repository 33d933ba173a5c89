"""A subprocess gate: pass, unless the candidate says HANG:NAME (then write this process's
pid to NAME.pid in the folder argv[1] and sleep: a gate the gateway must kill) or CRASH
(then exit 1: a gate error, counted by its error budget)."""
import json
import os
import re
import sys
import time
from pathlib import Path

candidate = json.load(sys.stdin)["candidate"] or ""
hang = re.search(r"HANG:(\w+)", candidate)
if hang:
    pidfile = Path(sys.argv[1]) / f"{hang[1]}.pid"
    Path(str(pidfile) + ".tmp").write_text(str(os.getpid()))
    os.replace(str(pidfile) + ".tmp", pidfile)
    time.sleep(120)
if "CRASH" in candidate:
    sys.exit(1)
print(json.dumps({"verdict": "pass"}))
