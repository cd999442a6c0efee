"""One notebook of a run: which notebooks, their declared parameters and the values given for them, the data
they need, what their kernel prints to the terminal, and the provenance record of the code it ran. Used by
`romae.runner.reproduce`.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import threading
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from ..compendium import report, syntax
from ..compendium.report import variant_slug
from ..config import as_list
from ..data import catalog

ROOT = report.ROOT


# ---------------------------------------------------------------- running notebooks

def select_notebooks(folder: Path, only: str | None = None) -> list[Path]:
    """notebooks/NN_*.ipynb sorted by name; `only` = comma-separated NN prefixes ("00,03"), "all" or None for
    every one. An `only` that names no notebook (`--only ''`, `make reproduce ONLY=`, blanks or commas alone) or a
    number no notebook has is a ValueError that lists the numbers there are: never "all" by accident."""
    found = sorted(p for p in Path(folder).glob("[0-9][0-9]_*.ipynb"))
    have = f"have: {', '.join(p.name[:2] for p in found) or 'none'}"
    if only is None or only.strip() == "all":
        return found
    wanted = {w.strip() for w in only.split(",") if w.strip()}
    if not wanted:
        raise ValueError(f"--only {only!r}: names no notebook; give comma-separated notebook numbers, e.g. 00,03, "
                         f"or all ({have} in {folder})")
    unknown = wanted - {p.name[:2] for p in found}
    if unknown:
        raise ValueError(f"--only {only}: no notebook numbered {', '.join(sorted(unknown))} in {folder} ({have})")
    return [p for p in found if p.name[:2] in wanted]


# ---------------------------------------------------------------- parameters and data

def notebook_parameters(path: Path) -> dict[str, tuple[str, object]]:
    """{name: (declared type, default)} of the notebook's `parameters` cell (annotated assignments)."""
    nb = json.loads(Path(path).read_text())
    for cell in nb["cells"]:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            out = {}
            for node in syntax.parse(src).body:
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                    out[node.target.id] = (ast.unparse(node.annotation), ast.literal_eval(node.value))
            return out
    return {}


def convert(value: str, declared: str, name: str):
    """A command-line value for a parameter of declared type `declared` (list, int, float, bool, str)."""
    try:
        if declared.startswith(("list", "tuple")):
            return as_list(value, name)
        if declared == "int":
            return int(value)
        if declared == "float":
            return float(value)
        if declared == "bool":
            low = value.strip().lower()
            if low not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError(value)
            return low in ("1", "true", "yes")
    except ValueError:
        raise ValueError(f"parameter {name}: {value!r} is not a valid {declared}") from None
    return value


def parse_params(pairs: list[str] | None) -> dict[str, str]:
    """['name=value', ...] -> {name: value}; the value may hold '=' and commas."""
    out = {}
    for pair in pairs or []:
        name, eq, value = pair.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_]\w*", name.strip()):
            raise ValueError(f"--param {pair!r}: write name=value, e.g. --param datasets=JapaneseVowels,Epilepsy")
        out[name.strip()] = value
    return out


def resolve_params(path: Path, profile: str, given: dict[str, str]) -> tuple[dict, dict]:
    """(every parameter as the notebook will see it, the ones set from `given`) for one notebook."""
    declared = notebook_parameters(path)
    effective = {k: default for k, (_, default) in declared.items()}
    overrides = {k: convert(v, declared[k][0], k) for k, v in given.items() if k in declared}
    effective.update(overrides, profile=profile)
    return effective, overrides


def notebook_needs(path: Path, params: dict) -> list[catalog.Need]:
    """The data a notebook needs with these parameters: its metadata's experiment module's `data_needs`."""
    experiment = json.loads(Path(path).read_text()).get("metadata", {}).get("romae", {}).get("experiment")
    if not experiment:
        return []
    module = importlib.import_module(f"romae.experiments.{experiment}")
    return module.data_needs(**params)


def data_check(path: Path, params: dict) -> tuple[str, str]:
    """(why the notebook cannot run: its required data that is missing, with the commands that fetch it, or
    ""; the optional data it will run without, or "") under its data root, with these parameters."""
    needs = notebook_needs(path, params)
    root = params.get("data_root") or None
    lacking, optional = catalog.missing(needs, root), catalog.missing(needs, root, optional=True)
    return ("; ".join(n.message(root) for n in lacking),
            "; ".join(n.message(root).removeprefix("needs ") for n in optional))


KERNEL_QUIET = ["--IPKernelApp.log_level=ERROR"]
SHOWN_RESULTS = 8  # result rows a notebook prints in the terminal; the rest are in SUMMARY.md


@contextmanager
def _echoed(path: Path, indent: str = "    "):
    """Print each whole line appended to `path` (by the kernel: romae.compendium.terminal.say) while the block runs, and
    what is left when it ends; then remove `path`."""
    stop = threading.Event()

    def follow():
        pos = 0
        while True:
            last = stop.is_set()
            try:
                with open(path, "rb") as f:
                    f.seek(pos)
                    chunk = f.read()
            except OSError:
                chunk = b""
            whole = chunk[:chunk.rfind(b"\n") + 1] if not last else chunk
            pos += len(whole)
            for line in whole.decode("utf-8", "replace").splitlines():
                print(indent + line, flush=True)
            if last:
                return
            stop.wait(0.5)

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)
        path.unlink(missing_ok=True)


def result_lines(path: Path) -> list[str]:
    """The terminal's summary of a notebook's result rows: 'result: <experiment> <setting> <metric> <ours> (n
    seeds)', at most SHOWN_RESULTS of them."""
    if not path.exists():
        return []
    try:
        rows = pd.read_csv(path)
    except (pd.errors.EmptyDataError, pd.errors.ParserError):
        return []
    lines = []
    for r in rows.head(SHOWN_RESULTS).itertuples():
        n = getattr(r, "n_seeds", None)
        n = int(n) if pd.notna(n) else None
        std = getattr(r, "ours_std", None)
        spread = f" +- {std:.4g}" if n and n > 1 and pd.notna(std) else ""
        seeds = f" ({n} seed{'s' if n != 1 else ''})" if n else ""
        value = f"{r.ours:.4g}" if isinstance(r.ours, (int, float)) and pd.notna(r.ours) else str(r.ours)
        lines.append(f"result: {r.experiment} | {r.setting} | {r.metric}: {value}{spread}{seeds}")
    if len(rows) > SHOWN_RESULTS:
        lines.append(f"... and {len(rows) - SHOWN_RESULTS} more result rows (SUMMARY.md)")
    return lines


def write_provenance(stage: Path, source: Path, profile: str, commit: str) -> Path:
    """<stage>/provenance/<notebook>.json: the profile, the commit and the code its kernel can have run
    (`romae.runner.provenance.record`: the code record of what the notebook's cells name, and the notebook's code);
    published with the artefacts. Its class (`romae.compendium.devices`): 'cuda' when the run or a training behind
    its rows ran on a CUDA device (its results.csv's device cells), else 'cpu'."""
    from ..compendium import devices
    from .provenance import record as code_record

    cells = []
    if (stage / "results.csv").exists():
        import pandas as pd

        cells = pd.read_csv(stage / "results.csv").get("device", pd.Series(dtype=object)).dropna().tolist()
    cls = "cuda" if devices.this_class() == "cuda" else devices.class_of_rows(cells)
    record = dict(notebook=source.stem, profile=profile, commit=commit, **code_record(source, device=cls))
    path = stage / "provenance" / f"{source.stem}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def variant_of(notebook: Path, profile: str, params: dict) -> str:
    """The variant folder's name a run of `notebook` with `params` publishes to ('' for the notebook's own run)."""
    return variant_slug(notebook.stem, profile, resolve_params(notebook, profile, params)[1])
