"""Every bound admiss puts on untrusted input, in one place (documented in docs/security.md).

Rubric numbers are bounded so that an absurd value is a compile error (E118) at the number,
not a crash or a hang when the gate runs. Bundles are bounded in size so that one hostile
or broken bundle costs a located error (B004-B006), not the machine's memory.
"""

from __future__ import annotations

# ---------------------------------------------------------------- rubric numbers (E118)

# Samples a consistency gate compares: agreement over more than this is not a check
# anyone runs, and each sample may be a model call.
MAX_K = 1000
# Outcomes an error budget remembers per gate.
MAX_WINDOW = 1_000_000
# A gate program's time limit: one day.
MAX_TIMEOUT_S = 86_400.0
# A whole number in a rubric with more digits than this is read as a float, so that no
# length of digits can reach Python's int-conversion limit; every bound above is far below it.
MAX_WHOLE_NUMBER_DIGITS = 18

# ---------------------------------------------------------------- bundles

# Size of one bundle (a .json file, one line of a .jsonl file, text given to check_many),
# and of any file admiss reads whole (a rubric, compiled IR): bytes, or characters once the
# text is decoded.
MAX_BUNDLE_BYTES = 32 * 1024 * 1024
# Evidence items in one bundle, the candidates' own items included.
MAX_EVIDENCE_ITEMS = 100_000
# Characters in any one string of a bundle (an output, a detail, a key).
MAX_STRING_CHARS = 8 * 1024 * 1024
# Digits in a JSON integer: Python's own limit for converting text to int (which it raises
# as an unlocated ValueError), applied on every Python version (B003).
MAX_INTEGER_DIGITS = 4300

# ---------------------------------------------------------------- gates

# Nesting of a value the schema gate validates. jsonschema recurses about four frames per
# level (about 240 levels fit the default stack, measured); checking the bound first means
# the stack is never exhausted, since a RecursionError raised that deep also breaks any
# finalizer that happens to run there.
MAX_VALIDATED_DEPTH = 128
