"""The facade: load or compile a rubric, check bundles. The one place the stages meet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from admiss import ir
from admiss.collector import collector_paused
from admiss.compiler import CompiledRubric, compile_ir
from admiss.errors import DOCS_URL, AdmissError, Diagnostic, IRError, RubricCompileError, RubricSyntaxError
from admiss.interpreter import CheckReport, Runtime, check_bundle, chosen_chain, check_trace
from admiss.source import Source, Span
from admiss.traces.input import as_trace, is_trace

if TYPE_CHECKING:
    from admiss.parser import Tree
    from admiss.traces.steps import Trace


class Rubric:
    """A compiled rubric. ``check(bundle)`` returns a report; pickles by its IR.

    Gate chains keep run state (error budgets, provider connections) across the bundles
    checked through one Rubric; ``close()`` (or a ``with`` block) releases it.
    """

    def __init__(self, compiled: CompiledRubric, config: str | Path | None = None, offline: bool = False):
        self.compiled = compiled
        self.config = Path(config) if config is not None else None
        self.offline = offline
        self._runtime: Runtime | None = None
        if self.config is not None:
            from admiss.config import load_config

            # A config the user named is checked now, even when no chain will read it: a
            # typo in its path or its keys must not pass silently.
            load_config(self.config)

    def __getstate__(self) -> dict:
        return {"compiled": self.compiled, "config": self.config, "offline": self.offline}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["compiled"], state["config"], state["offline"])

    def __enter__(self) -> "Rubric":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._runtime is not None:
            self._runtime.close()

    @property
    def ir(self) -> ir.Rubric:
        return self.compiled.ir

    @property
    def name(self) -> str:
        return self.compiled.name

    def check(self, bundle: Any, name: str | None = None, chain: str | None = None,
              trace_format: str | None = None, live: bool = False) -> CheckReport:
        """Check one decoded bundle (a dict) or agent trace (a Trace, or its decoded JSON).

        A trace's steps become evidence by the rubric's MAP block (docs/traces.md);
        ``trace_format`` reads ``bundle`` as a trace in that format. Raises BundleError
        when a bundle is malformed, TraceError when a trace is. ``chain`` picks the CHAIN
        to run when the rubric has several. ``live`` calls a rung's model (with the
        bundle's ``prompt``, or a trace's system and user messages) when the bundle has no
        candidate for it.
        """
        runtime = self._run_state()
        trace = as_trace(bundle, name or "<input>", trace_format)
        if trace is not None:
            return check_trace(self.compiled, trace, name, runtime, chain, live)
        return check_bundle(self.compiled, bundle, name, runtime, chain, live)

    def prepare(self, chain: str | None = None, live: bool = False) -> None:
        """Build the chain that ``check`` would run, before any bundle: raises InputError for
        a gate that cannot be built, and E140 for a model whose provider admiss.toml lacks
        (unless the rubric was loaded offline); with ``live``, for a rung's model too.
        ``check`` does the same on first use."""
        runtime = self._run_state()
        if runtime is None:
            chosen_chain(self.compiled, chain)  # E003 when a chain was asked for
        else:
            name = runtime.chain_name(chain)
            runtime.chain(name)
            if live:
                runtime.require_rung_providers(name)

    def _run_state(self) -> Runtime | None:
        if self._runtime is None and self.compiled.ir.chains:
            self._runtime = Runtime(self.compiled, self.config, self.offline)
        return self._runtime

    def gate_health(self) -> list:
        """Each gate's error budget in this Rubric's run so far: whether its budget disabled
        it, why, and its error rate (a list of ``admiss.cascade.GateHealth``)."""
        return self._runtime.gate_health() if self._runtime is not None else []

    def import_trace(self, trace: Any, name: str | None = None, trace_format: str | None = None) -> dict:
        """The bundle a trace makes under this rubric's MAP block, each evidence item with the
        rule that made it (``why``), and the steps not offered and why (``trace.not_offered``)."""
        from admiss.traces.mapping import explained_bundle
        from admiss.traces.read import read_trace

        read = as_trace(trace, name or "<input>", trace_format) or read_trace(trace, name or "<input>")
        return explained_bundle(self.compiled.mapping, read)

    def import_runs(self, value: Any, name: str | None = None, trace_format: str | None = None
                    ) -> list[tuple[str, "dict | AdmissError"]]:
        """``import_trace`` of every run ``value`` holds (``traces.read.read_traces``: the runs
        of a JSON array of runs, the cases of an ADK eval set or result), in order, each
        with its name; a run that cannot be read has its error in place of its bundle."""
        out: list[tuple[str, dict | AdmissError]] = []
        for run_name, run in self._runs(value, name or "<input>", trace_format):
            try:
                out.append((run_name, run if isinstance(run, AdmissError) else self.import_trace(run, run_name)))
            except AdmissError as error:
                out.append((run_name, error))
        return out

    def check_runs(self, value: Any, name: str | None = None, chain: str | None = None,
                   trace_format: str | None = None, live: bool = False) -> list[tuple[str, "CheckReport | AdmissError"]]:
        """``check`` of every run ``value`` holds, in order, each with its name (one item for
        a bundle or a one-run trace); a run that cannot be read or checked has its error in
        place of its report."""
        out: list[tuple[str, CheckReport | AdmissError]] = []
        for run_name, run in self._runs(value, name or "<input>", trace_format):
            try:
                out.append((run_name, run if isinstance(run, AdmissError) else
                            self.check(run, run_name, chain, live=live)))
            except AdmissError as error:
                out.append((run_name, error))
        return out

    @staticmethod
    def _runs(value: Any, name: str, trace_format: str | None) -> list[tuple[str, Any]]:
        from admiss.traces.read import read_traces

        if trace_format is None and not is_trace(value):
            try:  # a bundle, or both a bundle and a trace (B030)
                return [(name, as_trace(value, name) or value)]
            except AdmissError as error:
                return [(name, error)]
        return read_traces(value, name, trace_format)

    def to_ir_json(self) -> str:
        """The IR as deterministic JSON text (what ``admiss compile`` writes)."""
        return ir.to_json(self.compiled.ir)

    def __repr__(self) -> str:
        return f"<admiss.Rubric {self.name!r}: {len(self.compiled.properties)} properties>"


def compile_problems(tree: "Tree", source: Source, memo: dict | None = None) -> tuple[ir.Rubric, list[Diagnostic]]:
    """The IR of a parsed source, and every structural and semantic problem in it, in source order.

    The IR is what lowering could build; it is valid only when the list is empty. ``memo``
    is lowering's (``admiss.lower.lower``).
    """
    from admiss.analyze import analyze
    from admiss.lower import lower

    # A rubric from a string with no RUBRIC header and no file name is called "rubric".
    stem = Path(source.name).stem if not source.name.startswith("<") else "rubric"
    rubric, problems = lower(tree, source.name, stem or "rubric", memo)
    return rubric, sorted(problems + analyze(rubric, source.name), key=lambda d: (d.span.line, d.span.column))


def parse_source(text: str, name: str = "<string>") -> ir.Rubric:
    """The analysed IR of rubric source ``text``; RubricSyntaxError / RubricCompileError if bad."""
    # The parser (and lark) load only when a rubric is really parsed, not on a cache hit.
    from admiss.parser import parse

    source = Source(name, text)
    with collector_paused():
        rubric, problems = compile_problems(parse(source), source)
    if problems:
        syntax = any(d.code == "E100" for d in problems)
        raise (RubricSyntaxError if syntax else RubricCompileError)(problems, source)
    return rubric


def compile_source(text: str, name: str = "<string>", origin: str | None = None,
                   config: str | Path | None = None, offline: bool = False) -> Rubric:
    """Compile rubric source text. ``name`` is used in messages and for the default rubric name.

    ``origin`` is the rubric's path: gate files (schemas, subprocess folders) resolve next to
    it, and are checked to exist (E119, E120). Without it nothing on disk is checked.
    ``config`` and ``offline`` are as for :func:`load`.
    """
    rubric = parse_source(text, name)
    if origin is not None:
        _refuse_missing_gate_files(rubric, Path(origin), Source(name, text))
    return Rubric(compile_ir(rubric, origin), config, offline)


def _refuse_missing_gate_files(rubric: ir.Rubric, origin: Path, source: Source | None, shown: str | None = None) -> None:
    """RubricCompileError (E119, E120) when a gate's file or program is not where it will be
    looked for; the diagnostics name ``shown`` (default: the rubric's path)."""
    from admiss.analyze import missing_gate_files

    problems = missing_gate_files(rubric, origin.parent, shown or str(origin))
    if problems:
        raise RubricCompileError(problems, source)


def _json_path(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "$"


def _ir_schema_problems(data: Any, name: str) -> list[Diagnostic]:
    import jsonschema
    from importlib import resources

    schema = json.loads((resources.files("admiss") / "ir.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    return [
        Diagnostic("I001", f"{_json_path(error.absolute_path)}: {error.message}", file=name,
                   hint=f"IR files are written by admiss compile; see {DOCS_URL}ir.schema.json")
        for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    ]


def ir_from_json(text: str, name: str) -> ir.Rubric:
    """The IR stored in compiled JSON ``text``, checked against the IR schema and analysed."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IRError([Diagnostic("I001", f"invalid JSON: {exc.msg}", Span.point(exc.lineno, exc.colno),
                                  file=name)], Source(name, text)) from None
    except (ValueError, RecursionError) as exc:  # an integer past Python's digit limit; deep nesting
        raise IRError([Diagnostic("I001", f"invalid IR JSON: {exc}"[:200], file=name)]) from None
    version = data.get("ir_version") if isinstance(data, dict) else None
    if version not in ir.IR_VERSIONS or isinstance(version, bool):
        raise IRError([Diagnostic("I001", f"not admiss IR version {' or '.join(map(str, ir.IR_VERSIONS))} "
                                          f"(ir_version: {version!r})",
                                  file=name, hint="recompile the rubric with this admiss: admiss compile")])
    problems = _ir_schema_problems(data, name)
    if problems:
        raise IRError(problems)
    rubric = ir.from_dict(data)
    from admiss.analyze import analyze

    problems = analyze(rubric, name)
    if problems:
        # Spans in IR point into the source it was compiled from, so name that file.
        origin = rubric.source or "its source"
        import attrs

        raise IRError([attrs.evolve(d, file=f"{name} (compiled from {origin})",
                                    hint=(d.hint + "; " if d.hint else "") + "fix the source and recompile")
                       for d in problems])
    return rubric


def read_text(path: str | Path) -> str:
    """The text of ``path``, or InputError E001 naming the file (also when it is larger than
    admiss reads whole: a bundle's limit, so /dev/zero or a runaway file cannot eat memory)."""
    from admiss.files import reading
    from admiss.limits import MAX_BUNDLE_BYTES

    with reading(path), open(path, encoding="utf-8") as handle:
        text = handle.read(MAX_BUNDLE_BYTES + 1)
    if len(text) > MAX_BUNDLE_BYTES:
        from admiss.errors import input_error

        raise input_error(str(path), f"is larger than {MAX_BUNDLE_BYTES:,} bytes, the most admiss reads of one file",
                          hint=f"the limits are in {DOCS_URL}security.md#limits")
    return text


def load(path: str | Path, config: str | Path | None = None, offline: bool = False) -> Rubric:
    """Load a ``.rubric`` source file or compiled IR ``.json``.

    ``config`` is an admiss.toml for gate chains; without it one is looked for beside the
    rubric, then in the working folder. Every model a chain's gates call must have its
    provider there (else checking raises InputError E140), unless ``offline`` is true: then
    no model is called, such gates abstain with a reason starting "offline", and each
    report says the run was offline.
    """
    from admiss.ircache import cached_ir

    path = Path(path)
    text = read_text(path)
    if path.suffix == ".json":
        rubric = ir_from_json(text, str(path))
        # The spans point into the source the IR was compiled from, not into this file.
        _refuse_missing_gate_files(rubric, path, None, f"{path} (compiled from {rubric.source or 'its source'})")
    else:
        rubric = cached_ir(text, str(path), parse_source)
        # Checked on every load, cache hit or not: a file may have gone since it was cached.
        _refuse_missing_gate_files(rubric, path, Source(str(path), text))
    return Rubric(compile_ir(rubric, str(path)), config, offline)


def read_trace(obj_or_path: Any, format: str | None = None, name: str | None = None) -> "Trace":
    """The steps of an agent trace: a decoded JSON value, or the path of a JSON file.

    ``format`` names the trace format (see ``admiss.traces.read.FORMAT_NAMES``); without it
    the format is detected from the shape. Raises TraceError (B020-B039) for a trace that is
    in no format or breaks its format, BundleError B001 for a file that is not JSON, and
    InputError E001 for a file that cannot be read.
    """
    from admiss.traces.read import read_trace as read_value

    if isinstance(obj_or_path, (str, Path)):
        from admiss.bundle import parse_bundle_text
        from admiss.errors import TraceError
        from admiss.traces.build import located

        path = str(obj_or_path)
        text = read_text(path)
        try:
            return read_value(parse_bundle_text(text, path), name or path, format)
        except TraceError as error:  # the file's text is here: say at which line and column
            raise located(error, text) from None
    return read_value(obj_or_path, name or "<input>", format)
