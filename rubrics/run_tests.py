"""Subprocess gate for sec_filings: the answer must name its filing form.

Reads the gate's stdin contract ({"candidate": ..., "prompt": ..., "meta": ...}) and prints
a verdict. A fail is printed, never signalled by the exit code: a non-zero exit means the
checker itself broke, which the gate treats as an abstain.
"""

import json
import sys

PERIODIC_FORMS = ("10-K", "10-Q")


def verdict(candidate: str) -> dict:
    try:
        answer = json.loads(candidate)
    except json.JSONDecodeError:
        return {"verdict": "fail", "reason": "answer is not JSON"}
    if not isinstance(answer, dict):
        return {"verdict": "fail", "reason": "answer is not an object"}
    source = str(answer.get("source", ""))
    if any(form in source for form in PERIODIC_FORMS):
        return {"verdict": "pass", "score": 1.0, "reason": f"cites {source}"}
    return {"verdict": "fail", "score": 0.0, "reason": f"source {source!r} is not a 10-K or 10-Q"}


if __name__ == "__main__":
    request = json.load(sys.stdin)
    print(json.dumps(verdict(str(request.get("candidate", "")))))
