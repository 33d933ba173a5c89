"""The rubric grammar, shipped inside the wheel as ``admiss.grammar``."""
