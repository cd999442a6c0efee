"""The committed record of finished trainings: what of a long run must outlive the machine it ran on.

A paper run on a small machine outlasts a working session, and the next piece may start on a fresh clone that has
only what was committed. So every training of a paper run, once finished, is also written under <reports>/trainings/
(`romae.compendium.kept`): <name>-<config hash>-<code hash>.pt with a readable .json twin (config, code id and its
record `code_of`, device, stack, wall time, peak memory, the plan's estimate, the result's scalars), sealed (`seal`:
a sha256 of the whole twin). Weights (a `state_dict` member) are kept only when small (WEIGHTS_LIMIT), so what a
notebook needs afterwards (its evaluation) is kept as a result of its own. The record is read after the local cache
and written only while open (`$ROMAE_TRAININGS`; `make reproduce` opens <reports>/trainings/). A training stopped
before its end keeps its checkpoint in <record>/in_progress/ instead (`romae.compendium.travel`).

`check`, the one decision the loader and the command line share, gives each entry a `Verdict`:
- use: its twin's config and code hash to its name and its code_of to its code, its .pt has the sha256 the twin
  records and unpickles, and what the twin says of the .pt (summary, bytes, members left out) is what it holds;
- retrain: its code would now compute other numbers (`state`, by `romae.compendium.staleness`), or the run needs a
  member (the weights) that was left out;
- set aside: it fails a check above (copied under another name, edited by hand, truncated): never used; a run that
  asks for it says so (a warning and a terminal line) and trains again under its key.
A seal that does not match is said but the entry used (its numbers verify); entries kept before seals are *unsealed*.
    python -m romae.trainings [--reports reports] [--each]   # what the next run does with each entry; in progress
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import resource
import sys
import time
import warnings
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .. import storage as _storage
from . import terminal

ENV = "ROMAE_TRAININGS"
ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "reports" / "trainings"
SEAL = "seal"  # a twin's member: the sha256 of the rest of it (`seal_of`), written by `save`
WEIGHTS_LIMIT = 1 << 20  # bytes: weights at most this large are kept with their training (Pendulum's 0.3 MB)
_DEVICES: dict[str, None] = {}  # the devices of the trainings this process read from the record or ran, in order


def devices() -> list[str]:
    """The devices the trainings this process used ran on: those it read from the record, and this one once it
    trained one itself (`report.record` names them: a notebook may publish on a CPU what a GPU trained)."""
    return list(_DEVICES)


def ran_on(device: str | None = None) -> str:
    """A training this process used ran on `device` (a results-cache entry's, `romae.compendium.kept.kept`),
    or on this machine when None (it computed it, or found it in a cache entry that names no device): that device
    is among `devices()`, whether or not a record is open to keep it. Returns the label."""
    from .. import runtime

    label = device or runtime.device_label(runtime.current().device)
    _DEVICES[label] = None
    return label


def device_with_stack(meta: dict) -> str:
    """A training's device as `devices()` lists it: 'NVIDIA H200 (torch 2.11.0+cu130, CUDA 13.0)' when it ran on
    another device than this process's (the record's `stack`: the row then says who trained and who published),
    else the device alone; 'an unrecorded device' without one."""
    from .. import runtime

    device = meta.get("device") or "an unrecorded device"
    stack = meta.get("stack") if isinstance(meta.get("stack"), dict) else None
    if stack and device != runtime.device_label(runtime.current().device):
        return f"{device} (torch {stack.get('torch', '?')}, CUDA {stack.get('cuda', '?')})"
    return device


def open_folder() -> Path | None:
    """The record trainings are written to: the folder `$ROMAE_TRAININGS` names, or None (nothing is written)."""
    text = os.environ.get(ENV, "").strip()
    return Path(text) if text else None


def folders() -> list[Path]:
    """Where kept trainings are looked up: the open record, and the repository's own (reports/trainings/)."""
    out = [f for f in (open_folder(), DEFAULT) if f is not None]
    return list(dict.fromkeys(p.resolve() for p in out))


def _nbytes(obj: Any) -> int:
    if torch.is_tensor(obj):
        return obj.numel() * obj.element_size()
    if isinstance(obj, dict):
        return sum(_nbytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(v) for v in obj)
    return 0


def _on_arrow(dtype) -> bool:
    """A pandas dtype whose data lives in pyarrow (pandas' default string dtype where pyarrow is installed)."""
    return getattr(dtype, "storage", None) == "pyarrow" or type(dtype).__name__ == "ArrowDtype"


def _plain(dtype):
    """The pyarrow-free twin of `_on_arrow` dtype: strings in Python storage (pandas' own default without pyarrow),
    anything else as objects."""
    import pandas as pd

    if isinstance(dtype, pd.StringDtype):
        return pd.StringDtype("python", na_value=dtype.na_value)
    return object


def portable(obj: Any) -> Any:
    """`obj` with every pandas column, series and index that pyarrow stores converted to plain storage, through
    dicts, lists and tuples: a record written where pyarrow is installed (pandas then keeps strings in it, and
    pickles them so) must load where it is not (seen: the H200 image has pyarrow, this project does not need it)."""
    import pandas as pd

    if isinstance(obj, dict):
        return type(obj)((k, portable(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(portable(v) for v in obj)
    if isinstance(obj, pd.DataFrame):
        arrow = {c: _plain(t) for c, t in obj.dtypes.items() if _on_arrow(t)}
        obj = obj.astype(arrow) if arrow else obj
        if _on_arrow(obj.columns.dtype) or _on_arrow(obj.index.dtype):
            obj = obj.copy()
            obj.columns, obj.index = (portable(x) for x in (obj.columns, obj.index))
        return obj
    if isinstance(obj, pd.Series):
        obj = obj.astype(_plain(obj.dtype)) if _on_arrow(obj.dtype) else obj
        return obj.set_axis(portable(obj.index)) if _on_arrow(obj.index.dtype) else obj
    if isinstance(obj, pd.Index) and _on_arrow(obj.dtype):
        return obj.astype(_plain(obj.dtype))
    return obj


def compact(result: Any) -> tuple[Any, list[str]]:
    """(what is kept of a result, the members left out): a dict's `state_dict` larger than WEIGHTS_LIMIT is left out;
    everything else is kept, made `portable`."""
    if isinstance(result, dict) and "state_dict" in result and _nbytes(result["state_dict"]) > WEIGHTS_LIMIT:
        return portable({k: v for k, v in result.items() if k != "state_dict"}), ["state_dict"]
    return portable(result), []


def _scalars(result: Any) -> dict:
    """The result's top-level numbers and strings (and those of its `metrics`), for the readable twin."""
    out = {}
    if not isinstance(result, dict):
        return out
    for k, v in result.items():
        if isinstance(v, (bool, int, float, str)):
            out[k] = v
        elif isinstance(v, dict) and k == "metrics":
            out[k] = {kk: vv for kk, vv in v.items() if isinstance(vv, (int, float, str, bool))}
    return out


# ----------------------------------------------------------------------------- measuring a training

def _peak_rss_mb() -> float | None:
    """This process's peak resident memory since the last `_reset_peak` (Linux: VmHWM), else since it started."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    scale = 1 / 1024 if sys.platform != "darwin" else 1 / 2 ** 20  # ru_maxrss: kB on Linux, bytes on macOS
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def _reset_peak() -> bool:
    """Reset the peak-memory counters (Linux: writing 5 to /proc/self/clear_refs resets VmHWM; CUDA's peak stats)."""
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


@contextmanager
def measured():
    """Measure what runs inside: yields a dict filled on exit with wall_seconds and peak memory (host MB; CUDA GB,
    allocated and reserved), and `cuda_graphs` when this process barred them (CUDA_GRAPHS=0)."""
    facts: dict = {}
    reset = _reset_peak()
    t0 = time.perf_counter()
    try:
        yield facts
    finally:
        facts["wall_seconds"] = round(time.perf_counter() - t0, 2)
        rss = _peak_rss_mb()
        facts["peak_host_mb"] = None if rss is None else round(rss, 1)
        facts["peak_host_scope"] = "this training" if reset else "the process so far"
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            facts["peak_cuda_gb"] = round(torch.cuda.max_memory_allocated() / 2 ** 30, 3)
            # what the allocator held: CUDA graphs' private pools are reserved, not allocated, between replays
            facts["peak_cuda_reserved_gb"] = round(torch.cuda.max_memory_reserved() / 2 ** 30, 3)
        from .. import runtime

        if runtime.cuda_graphs_barred():
            facts["cuda_graphs"] = f"off for every training ({runtime.cuda_graphs_barred()})"


# ----------------------------------------------------------------------------- the record

def save(key: str, result: Any, meta: dict, folder: Path | None = None) -> Path | None:
    """Write `result` (compacted) as <folder>/<key>.pt and its readable twin, sealed (`seal_of`); nothing without an
    open record. meta: config, code, code_of (as the results cache records them) and facts (`measured`,
    planned_seconds)."""
    from .. import runtime
    from ..storage import _publish

    folder = folder or open_folder()
    if folder is None:
        return None
    kept, dropped = compact(result)
    buf = io.BytesIO()
    torch.save(kept, buf)
    data = buf.getvalue()
    folder.mkdir(parents=True, exist_ok=True)
    twin = dict(meta, sha256=hashlib.sha256(data).hexdigest(), dropped=dropped, bytes=len(data),
                summary=_scalars(kept), device=runtime.device_label(runtime.current().device),
                stack=runtime.stack(), finished=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    twin = json.loads(json.dumps(twin, default=str))  # as it reads back (what the seal must match)
    twin[SEAL] = seal_of(twin)
    path = folder / f"{key}.pt"
    _publish(path, folder / f"{key}.json", data, twin)
    ran_on(twin["device"])
    return path


def seal_of(meta: dict) -> str:
    """A twin's seal: the sha256 of its canonical JSON, every member but the seal itself."""
    body = {k: v for k, v in meta.items() if k != SEAL}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def _keyed_right(key: str, meta: dict) -> bool:
    """Whether twin `meta` describes the entry named `key`: its config and code hash to the key's two last parts (an
    entry copied under another training's key, or a twin edited by hand, does not)."""
    from .cache import key_of

    try:
        return key_of(key.rsplit("-", 2)[0], meta["config"], meta["code"]) == key
    except (KeyError, TypeError, ValueError):
        return False


USE, RETRAIN, SET_ASIDE, ABSENT = "use", "retrain", "set aside", "absent"


@dataclass(frozen=True)
class Verdict:
    """What a run does with a kept training (`check`, `next_run`): USE it, RETRAIN it (`why`: its code's numbers
    changed, or it lacks a member the run needs), SET_ASIDE it (`why`: it failed a check; the run retrains it), or
    ABSENT (no such entry in that folder). `note`: what a used entry's reader should know (unsealed, seal broken)."""

    action: str
    why: str = ""
    note: str = ""

    def __str__(self) -> str:
        if self.action == USE:
            return USE + (f" ({self.note})" if self.note else "")
        return f"{self.action} (why: {self.why})" if self.why else self.action


UNSEALED = "unsealed: kept before twins were sealed; its device, times and memory are descriptive, not verified"
EDITED = "its twin was edited after it was written"


def _canonical(obj: Any) -> str:
    """JSON that two equal summaries share whatever their key types and NaNs (a twin's, read back, and the .pt's)."""
    return json.dumps(json.loads(json.dumps(obj, default=str)), sort_keys=True)


def _twin_lies(key: str, meta: dict) -> str:
    """Why twin `meta` cannot be the entry named `key` (copied, or edited by hand), or '' when nothing says so."""
    from . import staleness

    if not _keyed_right(key, meta):
        return ("its config and code do not hash to its key (an entry copied under another training's name, or its "
                "config or code edited by hand)")
    made_of = meta.get("code_of")
    try:
        same = (staleness.code_id(made_of) if staleness.is_record(made_of) else _previous_code_id(made_of)) \
            == meta["code"]
    except (TypeError, ValueError):
        same = False
    if not same:
        return "its code_of (the record of its code) is missing or does not hash to its code (edited by hand)"
    dropped = meta.get("dropped", [])
    if not isinstance(dropped, list) or not all(isinstance(d, str) for d in dropped):
        return f"its twin's dropped is {dropped!r}, not a list of member names"
    return ""


def _pt_disagrees(meta: dict, result: Any, size: int, require: tuple[str, ...]) -> str:
    """What twin `meta` says of its .pt (`size` bytes, unpickled to `result`) that the .pt contradicts, or ''."""
    if "bytes" in meta and meta["bytes"] != size:
        return f"its twin says {meta['bytes']} bytes, its .pt has {size}"
    if isinstance(result, dict):
        kept_anyway = [d for d in meta.get("dropped", []) if d in result]
        if kept_anyway:
            return f"its twin says {kept_anyway[0]} was left out, but its .pt holds one"
        missing = [r for r in require if r not in result]
        if missing:
            return f"its .pt has no {missing[0]}, though its twin does not list it as left out"
    if "summary" in meta:
        ours, said = _scalars(result), meta["summary"]
        if _canonical(ours) != _canonical(said):
            diff = next((k for k in sorted(set(ours) | set(said if isinstance(said, dict) else {}), key=str)
                         if not isinstance(said, dict) or _canonical(ours.get(k)) != _canonical(said.get(k))), None)
            where = f" ({diff}: {said.get(diff) if isinstance(said, dict) else said!r} in the twin, " \
                    f"{ours.get(diff)!r} in the .pt)" if diff is not None else ""
            return f"its summary is not what its .pt holds{where}"
    return ""


def check(folder: Path, key: str, require: tuple[str, ...] = (), *, lock: bool = True) -> tuple[Verdict, Any, dict]:
    """(verdict, result, twin) of the entry named `key` in `folder`, as a run that asks for it (and needs each member
    of `require`) would find it: the one decision `load` acts on and `next_run` (the command line) reports.
    USE with the unpickled result; RETRAIN when it was kept without a required member; SET_ASIDE with why (a file
    missing or unreadable, `_twin_lies`, a .pt that fails its sha256 or does not unpickle, `_pt_disagrees`); ABSENT
    when neither file is there. Reads only (`lock`: under the folder's shared lock, as the loader reads)."""
    from ..storage import _lock, verified

    path, twin = folder / f"{key}.pt", folder / f"{key}.json"
    aside = lambda why: (Verdict(SET_ASIDE, why), None, meta)  # noqa: E731
    meta: dict = {}
    with _lock(folder, exclusive=False) if lock and folder.is_dir() else nullcontext():
        if not path.exists() and not twin.exists():
            return Verdict(ABSENT), None, meta
        if not twin.exists():
            return aside(f"its twin {twin.name} is missing: nothing vouches for its .pt")
        if not path.exists():
            return aside(f"its {path.name} is missing")
        try:
            meta = json.loads(twin.read_text())
        except (OSError, ValueError) as e:
            return aside(f"its twin {twin.name} is unreadable ({type(e).__name__}: {e})")
        if not isinstance(meta, dict):
            meta = {}
            return aside(f"its twin {twin.name} is not a JSON object")
        why = _twin_lies(key, meta)
        if why:
            return aside(why)
        lacking = [r for r in require if r in meta.get("dropped", [])]
        if lacking:
            return Verdict(RETRAIN, f"kept without its {lacking[0]}, which this run needs"), None, meta
        ran_there = _cuda_changed(meta)
        if ran_there:  # its key names the code every device runs; this, what it ran on CUDA only, changed
            return Verdict(RETRAIN, ran_there), None, meta
        verdict, reason, result = verified(path, twin)
        if verdict is not None:
            return aside(f"its .pt is {verdict}: {reason}")
        size = path.stat().st_size
    why = _pt_disagrees(meta, result, size, require)
    if why:
        return aside(why)
    note = (UNSEALED if SEAL not in meta else "" if meta[SEAL] == seal_of(meta) else
            f"{EDITED} (its seal does not match): its device, times and memory are not what it recorded")
    return Verdict(USE, note=note), result, meta


def _cuda_changed(meta: dict) -> str:  # `romae.compendium.staleness.cuda_changed`
    from . import staleness

    return staleness.cuda_changed(meta)


def _outdated(twin: Path) -> str:  # `romae.compendium.staleness.outdated`
    from . import staleness

    return staleness.outdated(twin)


_storage.OUTDATED = _outdated  # a results-cache entry computed on CUDA, stale in what ran there, is recomputed


def _tell(line: str) -> None:
    """A line for whoever runs: a warning (the notebook's output) and the terminal of `make reproduce`."""
    warnings.warn(line, stacklevel=4)
    terminal.say(line)


def load(key: str, require: tuple[str, ...] = (), folders: list[Path] | None = None) -> tuple[bool, Any]:
    """(True, result) for the first entry named `key` (in `folders`, default `folders()`) that `check` says to use,
    else (False, None): the caller trains. An entry set aside is said (a warning and a terminal line: set aside, why,
    and what happens instead) and left as it is; a used entry whose seal does not match is said too."""
    set_aside = []
    for folder in (globals()["folders"]() if folders is None else folders):
        verdict, result, meta = check(folder, key, require)
        if verdict.action == SET_ASIDE:
            set_aside.append((folder, verdict.why))
        if verdict.action != USE:
            continue  # absent, or kept without what the caller needs (its weights): looked up further, else trained
        for other, why in set_aside:
            _tell(f"kept training {key}: set aside in {other} ({why}); using {folder / f'{key}.pt'}")
        if verdict.note.startswith(EDITED):
            _tell(f"kept training {key}: used from {folder}, but {verdict.note}")
        _DEVICES[device_with_stack(meta)] = None
        return True, result
    for other, why in set_aside:
        _tell(f"kept training {key}: set aside in {other} ({why}); retraining")
    return False, None


# ----------------------------------------------------------------------------- re-keying (issue 42)

REKEY = "rekey.json"  # in a record folder: issue 51's re-key proof, not a training


def entries(folder: Path | None = None) -> list[dict]:
    """Every kept training's twin (with its file stem as `key`), oldest first."""
    folder = Path(folder) if folder is not None else (open_folder() or DEFAULT)
    out = []
    for twin in sorted(folder.glob("*.json")):
        if twin.name == REKEY:  # the re-key's proof, not a training
            continue
        try:
            meta = json.loads(twin.read_text())
        except (OSError, ValueError) as e:
            warnings.warn(f"kept training {twin} is unreadable ({type(e).__name__}: {e}); left out")
            continue
        out.append(dict(meta, key=twin.stem))
    return sorted(out, key=lambda m: m.get("finished", ""))


PREVIOUS = ("kept under the previous rule (numerics of 60 % of the library, definitions matched anywhere), not "
            "proven under the sound one (issue 51's re-key)")


def _previous_code_id(made_of: dict) -> str:
    """The code id of a twin kept under the rule before issue 51 (its code_of: numerics and definitions)."""
    return hashlib.sha256(json.dumps(made_of, sort_keys=True).encode()).hexdigest()


def _changed(meta: dict) -> str:
    """Why the next run would key twin `meta`'s training anew ('' when its code is the code's now): the units whose
    code changed, started or stopped running, and the workloads whose numbers moved (`romae.compendium.staleness`)."""
    from . import staleness

    made_of = meta.get("code_of")
    if not isinstance(made_of, dict):
        return f"its code_of is not a record of code ({str(made_of)[:60]})"
    if not staleness.is_record(made_of):
        return PREVIOUS
    why = staleness.check(made_of)
    return "; ".join(why[:4]) + (f" and {len(why) - 4} more" if len(why) > 4 else "")


def state(meta: dict) -> str:
    """What twin `meta` (with its `key`, as `entries` gives it) says of its code, without reading its .pt: 'current'
    when it is keyed right (`_keyed_right`) and the code it names, by its numbers, is the code's now
    (`romae.compendium.staleness`), else 'stale: <why>' (what changed), or 'damaged: <why>'. What the next run
    does with the entry, .pt and all: `next_run`."""
    if "key" in meta and not _keyed_right(meta["key"], meta):
        return "damaged: its config and code do not hash to its key (copied or edited by hand): never used"
    changed = _changed(meta)
    return f"stale: {changed}" if changed else "current"


def next_run(folder: Path, key: str) -> Verdict:
    """What the next run does with the entry named `key` in `folder`: `check`'s verdict (the loader's own decision,
    for a run that needs no member left out), and for an entry it would use, RETRAIN when its code would now compute
    other numbers (the run then keys the training anew and never asks for this entry)."""
    verdict, _, meta = check(Path(folder), key, lock=False)
    if verdict.action != USE:
        return verdict
    changed = _changed(meta)
    return Verdict(RETRAIN, changed) if changed else verdict


def _stems(folder: Path) -> list[str]:
    """The names of every entry in `folder`: a twin's or a .pt's stem (one without the other is an entry too)."""
    if not folder.is_dir():
        return []
    return sorted({p.stem for p in folder.glob("*.pt")} | {p.stem for p in folder.glob("*.json") if p.name != REKEY})


COLUMNS = ["name", "key", "action", "next_run", "state", "device", "wall_seconds", "planned_seconds", "ratio", "peak_host_mb",
           "peak_cuda_gb", "kept_kb", "without", "finished"]


def table(folder: Path | None = None):
    """One row per kept training (every twin and every .pt, oldest first): name, what the next run does with it
    (`action`: USE, RETRAIN or SET_ASIDE; `next_run`: that with why, as the command line says it), what its twin says of its code (`state`), device, wall time, the plan's estimate and their ratio,
    peak memory. A twin that cannot be read gives a row of its name and verdict only."""
    import pandas as pd

    folder = Path(folder) if folder is not None else (open_folder() or DEFAULT)
    rows = []
    for key in _stems(folder):
        try:
            m = json.loads((folder / f"{key}.json").read_text())
        except (OSError, ValueError):
            m = {}
        m = m if isinstance(m, dict) else {}
        verdict = next_run(folder, key)
        facts = m.get("facts") if isinstance(m.get("facts"), dict) else {}
        wall, planned = facts.get("wall_seconds"), m.get("planned_seconds")
        try:
            ratio = round(wall / planned, 2) if wall and planned else None
        except TypeError:
            ratio = None
        rows.append(dict(name=key.rsplit("-", 2)[0], key=key, action=verdict.action, next_run=str(verdict),
                         state=state(dict(m, key=key)) if m else f"damaged: {verdict.why}",
                         device=m.get("device", ""), wall_seconds=wall, planned_seconds=planned, ratio=ratio,
                         peak_host_mb=facts.get("peak_host_mb"), peak_cuda_gb=facts.get("peak_cuda_gb"),
                         kept_kb=round((m.get("bytes") or 0) / 1024, 1) if isinstance(m.get("bytes"), int) else None,
                         without=", ".join(map(str, dropped)) if isinstance(dropped := m.get("dropped") or [], list)
                         else str(dropped), finished=str(m.get("finished", ""))))
    rows.sort(key=lambda r: r["finished"])
    return pd.DataFrame(rows, columns=COLUMNS)


GROUPED = ["name", "device", "trainings", "current", "stale", "wall_hours", "planned_hours", "ratio", "peak_host_mb"]


def grouped(frame):
    """`table` summed per training name and device (a GPU's wall time is never set against the CPU's plan): count,
    current (the next run uses them) / stale (it trains them again: retrained or set aside), wall and planned hours,
    their ratio, peak memory."""
    import pandas as pd

    if frame.empty:
        return pd.DataFrame(columns=GROUPED)
    used = frame.action.eq(USE)
    g = frame.assign(current=used, stale=~used, with_plan=frame.planned_seconds.notna())
    by = ["name", "device"]
    out = g.groupby(by, sort=False).agg(trainings=("key", "size"), current=("current", "sum"),
                                        stale=("stale", "sum"), wall=("wall_seconds", "sum"),
                                        peak_host_mb=("peak_host_mb", "max")).reset_index()
    planned = g[g.with_plan].groupby(by, sort=False).agg(planned=("planned_seconds", "sum"),
                                                        wall_planned=("wall_seconds", "sum"))
    out = out.join(planned, on=by)
    out["wall_hours"] = (out.wall / 3600).round(3)
    out["planned_hours"] = (out.planned / 3600).round(3)
    out["ratio"] = (out.wall_planned / out.planned).round(2)
    return out[GROUPED]


def main(argv: list[str] | None = None) -> int:
    """Print each record (paper, then quick): its trainings per name and device and what the next run does with
    each entry; exit status 1 when an entry is set aside (damaged), else 0."""
    parser = argparse.ArgumentParser(prog="python -m romae.trainings", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", default=None, help="reports folder (default: <repo>/reports)")
    parser.add_argument("--each", action="store_true", help="one line per training, not per name")
    args = parser.parse_args(argv)
    root = Path(args.reports) / "trainings" if args.reports else DEFAULT
    status = 0
    for folder in (root, root / "quick"):  # the paper profile's record, then the quick profile's
        if folder.is_dir() or folder == root:
            status = max(status, _show(folder, args.each))
    return status


def _show(folder: Path, each: bool) -> int:
    """Print `folder`'s record (`main`) -> 1 when an entry of it is set aside, else 0."""
    t = table(folder)
    if t.empty:
        print(f"no kept trainings in {folder}")
        return 0
    import pandas as pd

    with pd.option_context("display.width", 250, "display.max_columns", 20, "display.max_rows", 500,
                           "display.max_colwidth", 80):
        short = t.assign(next_run=t.next_run.replace(f"{USE} ({UNSEALED})", f"{USE} (unsealed)"))
        print(short.drop(columns=["key", "action", "state"]).to_string(index=False) if each
              else grouped(t).to_string(index=False))
    used, retrained, aside = (int(t.action.eq(a).sum()) for a in (USE, RETRAIN, SET_ASIDE))
    unsealed = int(t.next_run.eq(f"{USE} ({UNSEALED})").sum())
    print(f"{len(t)} kept trainings in {folder}: {used} current (the next run uses them), {retrained} stale (retrained "
          f"when next run: their code changed, or it is not proven under the sound rule), {aside} damaged (set aside: "
          "never used; retrained when a run asks for them)"
          + (f"; {unsealed} of them unsealed (kept before twins were sealed: their device, times and memory are "
             "descriptive, not verified)" if unsealed else ""))
    shown = t[~t.next_run.isin([USE, f"{USE} ({UNSEALED})"])]
    for i, row in enumerate(shown.itertuples()):
        if i == 20 and not each:
            print(f"  ... and {len(shown) - 20} more (--each lists every training)")
            break
        print(f"  {row.key}: {row.next_run}")
    return 1 if aside else 0


if __name__ == "__main__":
    sys.exit(main())
