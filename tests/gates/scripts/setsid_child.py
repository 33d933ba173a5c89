"""Start a daemon that leaves the process group (it calls setsid()) and sleeps, by a double
fork: its first parent exits, so it is orphaned as well. Record the program's and the
daemon's pids in argv[1]; then, by argv[2], print a pass verdict and exit ("exit") or hang
("hang")."""
import json
import os
import sys
import time

sys.stdin.read()
ready_read, ready_write = os.pipe()
if os.fork() == 0:  # the first child: start the daemon, then exit
    if os.fork() == 0:  # the daemon
        os.setsid()
        os.write(ready_write, str(os.getpid()).encode())
        os.close(ready_write)
        time.sleep(120)
        os._exit(0)
    os._exit(0)
daemon = int(os.read(ready_read, 32))
with open(sys.argv[1] + ".tmp", "w") as f:
    json.dump({"leader": os.getpid(), "daemon": daemon}, f)
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
if sys.argv[2] == "hang":
    time.sleep(120)
sys.stdout.write('{"verdict": "pass", "reason": "started a daemon"}')
