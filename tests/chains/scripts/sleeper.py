"""Write this process's pid to argv[1], then sleep long: a gate that must be cancelled."""
import os
import sys
import time
from pathlib import Path

Path(sys.argv[1] + ".tmp").write_text(str(os.getpid()))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(120)
