"""``admiss lsp``: the rubric language server.

``server.py`` is the only module that imports pygls and lsprotocol; it turns requests into
calls on the modules beside it, which speak admiss's own types (Span, Diagnostic, the IR)
and reuse the parser, analysis, linter and formatter as they are.
"""
