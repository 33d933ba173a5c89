"""On-demand benchmarks for admiss; run with ``python benchmarks/run.py`` (never part of the tests)."""
