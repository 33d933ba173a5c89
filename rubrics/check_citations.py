"""Subprocess gate for research_citations: every [n] marker must name a listed source.

The candidate is the answer JSON: {"answer": "text with [1] markers", "sources": [...]}.
A broken reference prints a fail verdict; the exit code stays 0 because a non-zero exit
means the checker itself broke (the gate then abstains).
"""

import json
import re
import sys

MARKER = re.compile(r"\[(\d+)\]")


def verdict(candidate: str) -> dict:
    try:
        answer = json.loads(candidate)
        text, sources = str(answer["answer"]), list(answer["sources"])
    except (json.JSONDecodeError, KeyError, TypeError):
        return {"verdict": "fail", "reason": "answer must be JSON with 'answer' and 'sources'"}
    cited = {int(n) for n in MARKER.findall(text)}
    if not cited:
        return {"verdict": "fail", "score": 0.0, "reason": "the answer cites nothing"}
    dangling = sorted(n for n in cited if not 1 <= n <= len(sources))
    if dangling:
        return {"verdict": "fail", "score": 0.0, "reason": f"no source for {dangling}"}
    return {"verdict": "pass", "score": 1.0, "reason": f"{len(cited)} citation(s) resolve"}


if __name__ == "__main__":
    request = json.load(sys.stdin)
    print(json.dumps(verdict(str(request.get("candidate", "")))))
