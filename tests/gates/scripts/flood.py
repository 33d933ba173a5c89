"""Record this pid in argv[1], then write stdout without end."""
import os
import sys

with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
chunk = "x" * 65536
while True:
    sys.stdout.write(chunk)
