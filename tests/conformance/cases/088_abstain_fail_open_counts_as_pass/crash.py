"""Conformance subprocess gate that breaks: a non-zero exit is an abstain."""
import sys

sys.exit(3)
