"""Print a valid pass verdict, then fail with status 3: a non-zero exit must still abstain."""
import sys

print('{"verdict": "pass"}')
print("boom: something broke", file=sys.stderr)
sys.exit(3)
