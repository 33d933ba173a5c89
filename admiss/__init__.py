"""admiss: evidence-first rubrics and gate chains for verifying the work of LLM agents."""

__version__ = "0.1.0"
