"""admiss: evidence-first rubrics and gate chains for verifying the work of LLM agents.

    >>> import admiss
    >>> rubric = admiss.load("rubrics/sec_filings.rubric")
    >>> report = rubric.check({"evidence": []})
    >>> report.verdict
    'fail'
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["load", "compile_source", "check_many", "read_trace", "Rubric", "Router", "AdmissError", "__version__"]


def __getattr__(name: str):
    # The API is imported on first use so `import admiss` (and the CLI's start-up) stays cheap.
    if name in ("load", "compile_source", "read_trace", "Rubric"):
        from admiss import api

        return getattr(api, name)
    if name == "check_many":
        from admiss.runner import check_many

        return check_many
    if name == "Router":
        from admiss.serve.router import Router

        return Router
    if name == "AdmissError":
        from admiss.errors import AdmissError

        return AdmissError
    raise AttributeError(f"module 'admiss' has no attribute {name!r}")
