"""The error a gate raises from data it does not trust; a module of its own so that every
stage can raise it (admiss.jsonio, below admiss.errors, included) without an import cycle."""

from __future__ import annotations


class UntrustedInput(ValueError):
    """Data from outside admiss that a gate reads (a candidate's output, a sample, a model's
    reply, a gate program's stdout) could not be read or compared; the message says why.

    Raised inside a gate, it is the candidate's fault, never the gate's (admiss.cascade
    classifies it so): a gate's error budget counts only what no candidate can provoke.
    """
