"""Conformance subprocess gate: pass when the candidate mentions "10-K", fail otherwise."""
import json
import sys

request = json.load(sys.stdin)
ok = "10-K" in request["candidate"]
print(json.dumps({"verdict": "pass" if ok else "fail", "score": 1.0 if ok else 0.0,
                  "reason": "mentions a 10-K" if ok else "no 10-K mentioned"}))
