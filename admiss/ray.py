"""Checking bundles on a Ray cluster with Ray Data: the only module that imports ray.

``check_dataset`` reads JSON Lines of bundles (local paths and globs, or any URI that
pyarrow's filesystems open, such as ``s3://``), checks them in a pool of Ray actors, and
writes into an output folder:

- ``reports.jsonl``: one line per bundle, in input order, byte for byte what
  ``admiss check --format json`` prints for the same files (errors as error lines);
- ``properties.parquet/``: one row per bundle and property, for analysis;
- ``summary.json``: counts by verdict and by exclusion reason, and the chains' spend.

Files are read as bytes and split into lines here, so a bad line becomes its bundle's
error report, never a failed Ray task. Each actor checks one bundle at a time, so a gate
chain's model calls are bounded by the actor count (``concurrency``) times one rung's gates.
Install with ``pip install 'admiss[ray]'``.
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa
import ray
import ray.data

from admiss.api import Rubric, load
from admiss.checkrun import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_PASS, CheckOptions, CheckRun
from admiss.config import find_config
from admiss.errors import AdmissError
from admiss.files import atomic_writer, refuse_overwriting_inputs, write_atomically
from admiss.pieces import cut_pieces
from admiss.units import no_bundles

# What check_dataset writes into its output folder.
OUTPUT_FILES = ("reports.jsonl", "properties.parquet", "summary.json")
# Lines per block handed to an actor.
BATCH_SIZE = 256
# Orders rows: file number × this + line number.
_LINES_PER_FILE = 1 << 40
# The Parquet rows' types, fixed: inferred per block, a block whose bundles all failed has
# null-typed columns, and files of one folder would disagree (readers refuse to merge them).
_PROPERTY_SCHEMA = pa.schema([
    ("bundle", pa.string()), ("bundle_verdict", pa.string()), ("property", pa.string()), ("verdict", pa.string()),
    ("evidence", pa.int64()), ("forbidden", pa.int64()), ("inadmissible", pa.int64()),
    ("shortcut_rejected", pa.int64()), ("error_code", pa.string())])


def _expanded(paths: Iterable[str | Path]) -> list[str]:
    """Local globs expanded (sorted); URIs and plain paths kept as given."""
    out: list[str] = []
    for path in map(str, paths):
        matches = sorted(glob.glob(path)) if "://" not in path and glob.has_magic(path) else [path]
        out.extend(matches)
    return out


def _read_lines(piece: dict[str, Any]) -> list[dict[str, Any]]:
    """A piece's lines as rows (file, line, path, text). A piece without a bundle gives one
    row with no text and line 0 (sorted after its file's lines): the writer reports E180
    for a file whose pieces all gave none. Runs in a Ray task."""
    import pyarrow.fs

    filesystem, where = pyarrow.fs.FileSystem.from_uri(piece["uri"])
    with filesystem.open_input_file(where) as stream:
        stream.seek(piece["start"])
        data = stream.read() if piece["end"] < 0 else stream.read(piece["end"] - piece["start"])
    rows = [{"file": piece["file"], "line": number, "path": piece["path"], "text": line}
            for number, line in enumerate(data.split(b"\n"), start=piece["first_line"]) if line.strip()]
    return rows or [{"file": piece["file"], "line": 0, "path": piece["path"], "text": None}]


class _Checker:
    """A Ray actor's checker: the check run (with its compiled rubric) built once."""

    def __init__(self, run: CheckRun):
        self.run = run

    def __call__(self, batch: dict[str, Any]) -> dict[str, list]:
        out: dict[str, list] = {"order": [], "file": [], "line": [], "bundle": [], "verdict": [], "report": [],
                                "error": []}
        for file, line, path, text in zip(batch["file"], batch["line"], batch["path"], batch["text"]):
            line, path = int(line), str(path)
            name = f"{path}:{line}" if line else path
            if text is None:
                shown, error, _, verdict = self.run.error_outcome(no_bundles(path), path)
            else:
                shown, error, _, verdict = self.run.outcome((path, line, bytes(text)))
            out["order"].append(int(file) * _LINES_PER_FILE + (line or _LINES_PER_FILE - 1))
            out["file"].append(int(file))
            out["line"].append(line)
            out["bundle"].append(name)
            out["verdict"].append(verdict)
            out["report"].append(shown.decode("utf-8"))
            out["error"].append(error or "")
        return out


def _property_rows(row: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per property of a report (one row for a bundle that could not be checked)."""
    report = json.loads(row["report"])
    if "error" in report:
        return [{"bundle": row["bundle"], "bundle_verdict": "error", "property": None, "verdict": None,
                 "evidence": 0, "forbidden": 0, "inadmissible": 0, "shortcut_rejected": 0,
                 "error_code": report["error"][0]["code"]}]
    rows = []
    for prop in report["properties"]:
        reasons = [entry["reason"] for entry in prop["excluded"]]
        rows.append({"bundle": row["bundle"], "bundle_verdict": report["verdict"], "property": prop["name"],
                     "verdict": prop["verdict"], "evidence": len(prop["evidence"]),
                     "forbidden": reasons.count("forbidden"), "inadmissible": reasons.count("inadmissible"),
                     "shortcut_rejected": reasons.count("shortcut-rejected"), "error_code": None})
    return rows


class _Summary:
    """Counts by verdict and by exclusion reason, and the chains' spend, added up in order."""

    def __init__(self) -> None:
        self.by_verdict = {"pass": 0, "fail": 0, "error": 0}
        self.by_reason = {"forbidden": 0, "inadmissible": 0, "shortcut-rejected": 0}
        self.model_cost = self.gate_cost = 0.0

    def add(self, verdict: str, report: dict[str, Any]) -> None:
        self.by_verdict[verdict] += 1
        for prop in report.get("properties", ()):
            for entry in prop["excluded"]:
                self.by_reason[entry["reason"]] += 1
        chain = report.get("chain")
        if chain:
            self.model_cost += chain["model_cost_usd"]
            self.gate_cost += chain["gate_cost_usd"]

    def to_dict(self) -> dict[str, Any]:
        return {"bundles": sum(self.by_verdict.values()), "by_verdict": self.by_verdict,
                "by_exclusion_reason": self.by_reason,
                "chain_spend": {"model_cost_usd": round(self.model_cost, 9), "gate_cost_usd": round(self.gate_cost, 9)}}


def lines_dataset(paths: Iterable[str | Path], pieces_per_file: int = 8) -> "ray.data.Dataset":
    """The lines of JSON Lines files as a dataset of (file, line, path, text) rows, in
    blocks: a local file is cut at line boundaries as ``admiss check --jobs`` cuts it, a
    URI is read whole by one task."""
    pieces = []
    for file, name in enumerate(_expanded(paths)):
        if "://" in name:
            pieces.append({"file": file, "path": name, "uri": name, "start": 0, "end": -1, "first_line": 1})
            continue
        uri = os.path.abspath(name)
        for piece in cut_pieces([Path(name)], pieces_per_file):
            pieces.append({"file": file, "path": name, "uri": uri, "start": piece.start, "end": piece.end,
                           "first_line": piece.first_line})
    # Reading is light: it takes no CPU from the actors that check, and at most two tasks
    # read at once (zero-CPU tasks are otherwise started without bound).
    return ray.data.from_items(pieces, override_num_blocks=len(pieces)).flat_map(
        _read_lines, num_cpus=0, compute=ray.data.TaskPoolStrategy(size=2))


def check_dataset(dataset_or_paths: Any, rubric: Rubric | str | Path, output: str | Path, *,
                  chain: str | None = None, report: str = "lean", concurrency: int | None = None,
                  config: str | Path | None = None, offline: bool = False, errors: Any = None) -> dict[str, Any]:
    """Check JSON Lines of bundles on Ray and write reports, Parquet and a summary into
    ``output``; the summary (also written as summary.json).

    ``dataset_or_paths`` is a path, a glob, a list of them (URIs too), or a Ray dataset of
    rows with ``file``, ``line``, ``path`` and ``text`` as :func:`lines_dataset` makes.
    ``concurrency`` is the number of actors (default: the cluster's CPUs). Error texts go
    to ``errors`` (a text stream) when given, in input order.
    """
    folder = Path(output)
    given = None if isinstance(dataset_or_paths, ray.data.Dataset) else \
        [dataset_or_paths] if isinstance(dataset_or_paths, (str, Path)) else list(dataset_or_paths)
    source = None if isinstance(rubric, Rubric) else Path(rubric)
    config_file = find_config(Path(config) if config else None, source)
    refuse_overwriting_inputs([folder / name for name in OUTPUT_FILES],
                              [*_expanded(given or ()), *filter(None, (source, config_file))])
    if not isinstance(rubric, Rubric):
        rubric = load(rubric, config, offline)
    run = CheckRun(CheckOptions(rubric=None, fmt="json", chain=chain, offline=offline, report=report), many=True, rubric=rubric)
    lines = dataset_or_paths if given is None else lines_dataset(given)
    actors = concurrency or max(1, int(ray.cluster_resources().get("CPU", 1)))
    checked = lines.map_batches(
        _Checker, fn_constructor_args=(run,), batch_size=BATCH_SIZE, compute=ray.data.ActorPoolStrategy(size=actors),
        batch_format="numpy", num_cpus=1).materialize()
    folder.mkdir(parents=True, exist_ok=True)
    checked.flat_map(_property_rows).write_parquet(str(folder / "properties.parquet"), schema=_PROPERTY_SCHEMA)
    summary = _Summary()
    bundles_in_file: dict[int, int] = {}
    with atomic_writer(folder / "reports.jsonl") as out:
        for row in checked.sort("order").iter_rows():
            file = row["file"]
            if row["line"] == 0:  # a piece without bundles: E180 once, for a file without any
                if bundles_in_file.get(file, 0):
                    continue
                bundles_in_file[file] = -1
            else:
                bundles_in_file[file] = 1
            out.write(row["report"] + "\n")
            summary.add(row["verdict"], json.loads(row["report"]))
            if row["error"] and errors is not None:
                errors.write(row["error"] + "\n")
    result = summary.to_dict()
    write_atomically(folder / "summary.json", json.dumps(result, indent=2) + "\n")
    return result


def _quiet() -> None:
    """Ray's own chatter off: its INFO lines and progress log, the C++ core worker's log, its
    warnings. For 3 bundles Ray printed some 60 lines that said nothing about them. Ray's
    errors still come as exceptions, and admiss's own errors are still written."""
    # Read by the driver's core worker when ray.init starts it, so set before.
    os.environ["RAY_BACKEND_LOG_LEVEL"] = "fatal"
    logging.getLogger("ray").setLevel(logging.ERROR)
    logging.getLogger("ray.data").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", module=r"ray(\.|$)")
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False


@contextlib.contextmanager
def _stderr_silenced():
    """File descriptor 2 sent to /dev/null: the core worker's C++ log writes there when
    ray.init starts it (a line saying which log level it read), past Python's logging. A
    failed start still raises."""
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def run_on_ray(address: str, paths: list[Path], rubric: Path, output: Path, chain: str | None, report: str,
               config: Path | None, offline: bool = False, verbose: bool = False) -> int:
    """``admiss check --ray ADDRESS``: the exit code, as ``admiss check`` would give it.
    Ray's own logging is off unless ``verbose``."""
    if not verbose:
        _quiet()
    with contextlib.nullcontext() if verbose else _stderr_silenced():
        if address == "local":
            # A Ray instance of this machine's own, reached over loopback only.
            ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False,
                     _node_ip_address="127.0.0.1")
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    try:
        summary = check_dataset([str(p) for p in paths], rubric, output, chain=chain, report=report, config=config,
                                offline=offline, errors=sys.stderr)
    except AdmissError as error:  # the rubric or an input file cannot be read
        sys.stderr.write(error.render() + "\n")
        return EXIT_BAD_INPUT
    finally:
        ray.shutdown()
    counts = summary["by_verdict"]
    return EXIT_BAD_INPUT if counts["error"] else EXIT_FAIL if counts["fail"] else EXIT_PASS
