"""Print argv[1] on stdout as it is, and exit 0: a verdict, a bad score, or garbage."""
import sys

sys.stdin.read()
sys.stdout.write(sys.argv[1])
