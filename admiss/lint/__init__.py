"""``admiss lint``: weak or contradictory rubrics, reported with stable codes.

``lint_source(text, name, config)`` returns every compile error and rule finding at once;
the code table is in :mod:`admiss.lint.codes`, one module per rule in
:mod:`admiss.lint.rules`.
"""

from admiss.lint.config import LintConfig, find_config
from admiss.lint.engine import lint_source

__all__ = ["LintConfig", "find_config", "lint_source"]
