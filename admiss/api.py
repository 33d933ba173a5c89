"""The facade: load or compile a rubric, check bundles. The one place the stages meet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from admiss import ir
from admiss.collector import collector_paused
from admiss.compiler import CompiledRubric, compile_ir
from admiss.errors import Diagnostic, IRError, RubricCompileError, RubricSyntaxError
from admiss.interpreter import CheckReport, Runtime, check_bundle
from admiss.source import Source, Span

if TYPE_CHECKING:
    from admiss.parser import Tree


class Rubric:
    """A compiled rubric. ``check(bundle)`` returns a report; pickles by its IR.

    Gate chains keep run state (error budgets, provider connections) across the bundles
    checked through one Rubric; ``close()`` (or a ``with`` block) releases it.
    """

    def __init__(self, compiled: CompiledRubric, config: str | Path | None = None):
        self.compiled = compiled
        self.config = Path(config) if config is not None else None
        self._runtime: Runtime | None = None
        if self.config is not None:
            from admiss.config import load_config

            # A config the user named is checked now, even when no chain will read it: a
            # typo in its path or its keys must not pass silently.
            load_config(self.config)

    def __getstate__(self) -> dict:
        return {"compiled": self.compiled, "config": self.config}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["compiled"], state["config"])

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

    def check(self, bundle: Any, name: str | None = None, chain: str | None = None) -> CheckReport:
        """Check one decoded bundle (a dict). Raises BundleError when it is malformed.

        ``chain`` picks the CHAIN to run when the rubric has several.
        """
        if self._runtime is None and self.compiled.ir.chains:
            self._runtime = Runtime(self.compiled, self.config)
        return check_bundle(self.compiled, bundle, name, self._runtime, chain)

    def to_ir_json(self) -> str:
        """The IR as deterministic JSON text (what ``admiss compile`` writes)."""
        return ir.to_json(self.compiled.ir)

    def __repr__(self) -> str:
        return f"<admiss.Rubric {self.name!r}: {len(self.compiled.properties)} properties>"


def compile_problems(tree: "Tree", source: Source) -> tuple[ir.Rubric, list[Diagnostic]]:
    """The IR of a parsed source, and every structural and semantic problem in it, in source order.

    The IR is what lowering could build; it is valid only when the list is empty.
    """
    from admiss.analyze import analyze
    from admiss.lower import lower

    # A rubric from a string with no RUBRIC header and no file name is called "rubric".
    stem = Path(source.name).stem if not source.name.startswith("<") else "rubric"
    rubric, problems = lower(tree, source.name, stem or "rubric")
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
                   config: str | Path | None = None) -> Rubric:
    """Compile rubric source text. ``name`` is used in messages and for the default rubric name.

    ``origin`` is the rubric's path: gate files (schemas, subprocess folders) resolve next to
    it, and are checked to exist (E119, E120). Without it nothing on disk is checked.
    """
    rubric = parse_source(text, name)
    if origin is not None:
        _refuse_missing_gate_files(rubric, Path(origin), Source(name, text))
    return Rubric(compile_ir(rubric, origin), config)


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
                   hint="IR files are written by admiss compile; see docs/ir.schema.json")
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
    if version != ir.IR_VERSION:
        raise IRError([Diagnostic("I001", f"not admiss IR version {ir.IR_VERSION} (ir_version: {version!r})",
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
                          hint="the limits are in docs/security.md")
    return text


def load(path: str | Path, config: str | Path | None = None) -> Rubric:
    """Load a ``.rubric`` source file or compiled IR ``.json``.

    ``config`` is an admiss.toml for gate chains; without it one is looked for beside the
    rubric, then in the working folder.
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
    return Rubric(compile_ir(rubric, str(path)), config)
