"""Pass the candidate "good", fail any other: a gate whose verdict depends on the candidate."""
import json
import sys

candidate = json.loads(sys.stdin.read())["candidate"]
verdict = "pass" if candidate == "good" else "fail"
sys.stdout.write(json.dumps({"verdict": verdict, "reason": f"graded {candidate!r}"}))
