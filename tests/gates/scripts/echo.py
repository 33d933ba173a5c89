"""Pass, and report in the reason what arrived: stdin, argv, the environment, the folder."""
import json
import os
import sys

received = {"stdin": sys.stdin.read(), "argv": sys.argv, "env": dict(os.environ), "cwd": os.getcwd()}
print(json.dumps({"verdict": "pass", "score": 1, "reason": json.dumps(received)}))
