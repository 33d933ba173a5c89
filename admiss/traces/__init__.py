"""Agent traces: one reader module per format, all reading into ``steps.Trace``."""
