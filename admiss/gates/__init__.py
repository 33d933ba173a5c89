"""Gate kinds, one module each. A gate reads a candidate's output and returns a GateResult."""
