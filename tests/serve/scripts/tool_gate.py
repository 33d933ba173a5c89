"""A subprocess gate over proposed tool calls: fail a refund of more than 100, else pass;
the reason lists the calls it read from stdin, so a test sees what the contract gave it."""
import json
import sys

request = json.load(sys.stdin)
calls = request.get("tool_calls", [])
names = [call["function"]["name"] for call in calls]
for call in calls:
    arguments = json.loads(call["function"]["arguments"])
    if call["function"]["name"] == "issue_refund" and arguments.get("amount", 0) > 100:
        print(json.dumps({"verdict": "fail", "reason": f"refund too large; calls read: {names}"}))
        sys.exit(0)
print(json.dumps({"verdict": "pass", "reason": f"calls read: {names}"}))
