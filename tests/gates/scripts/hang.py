"""Start a child in the same process group, record both pids in argv[1], then hang.

With --leave-child, print a pass verdict and exit at once instead, leaving the child behind.
"""
import json
import os
import subprocess
import sys
import time

child = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(120)"],
    stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)
with open(sys.argv[1] + ".tmp", "w") as f:
    json.dump({"leader": os.getpid(), "child": child.pid}, f)
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
if "--leave-child" in sys.argv:
    print('{"verdict": "pass"}')
    sys.exit(0)
time.sleep(120)
