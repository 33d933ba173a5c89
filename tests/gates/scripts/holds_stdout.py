"""Start a child that inherits stdout and keeps it open, record both pids in argv[1], print a
pass verdict and exit at once: the verdict must count when this program exits."""
import json
import os
import subprocess
import sys

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], stdin=subprocess.DEVNULL)
with open(sys.argv[1] + ".tmp", "w") as f:
    json.dump({"leader": os.getpid(), "child": child.pid}, f)
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
sys.stdout.write('{"verdict": "pass", "reason": "done; my child keeps stdout open"}')
sys.stdout.flush()
os._exit(0)
