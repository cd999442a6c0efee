"""The committed record of finished trainings: what of a long run must outlive the machine it ran on.

A paper-profile run on a small machine takes longer than one working session, and the next piece may start on a
fresh clone that has only what was committed: the results cache (.cache/romae/) and the checkpoints (runs/) are
gone. So every training of a paper run, once finished, is also written here, under <reports>/trainings/, as the
results cache writes it (`romae.compendium.kept.kept`): <name>-<config hash>-<code hash>.pt with a .json twin
that says, readably, what it is: its resolved config, the code key and the modules it hashes, the device, the
wall time, the peak memory, the plan's estimate and the result's scalar numbers. The result is kept whole except
its weights (a `state_dict` member), which are kept only when small (WEIGHTS_LIMIT: Pendulum's, not UEA's), so
what a notebook needs afterwards, its evaluation, is kept as a result of its own beside the training
(`pretrain_finetune`'s test predictions, notebook 15's evaluations), never recomputed from weights that are not
there (`fit_cached(need_weights=True)` retrains where weights must be had).

`romae.compendium.kept` reads here after the local cache, so a resumed run trains only what is missing; it writes
here only while a record is open: `$ROMAE_TRAININGS` names its folder (`make reproduce` opens <reports>/trainings/).
An entry is named by its config and by the *numbers* of the code that trained it (`romae.numerics`), so a comment,
a moved function or a reworded message keeps it current; it is stale (`state`) only when the code would now compute
other numbers (its key no longer matches: it is retrained, like any artefact of such code), and damaged when its
twin does not hash to its name (copied or edited by hand: never used).

    python -m romae.compendium.trainings [--reports reports]     # every kept training: current or stale, time, memory, plan
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
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

ENV = "ROMAE_TRAININGS"
ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "reports" / "trainings"
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
    """Measure what runs inside: yields a dict filled on exit with wall_seconds and peak memory (host MB; CUDA GB)."""
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


# ----------------------------------------------------------------------------- the record

def save(key: str, result: Any, meta: dict, folder: Path | None = None) -> Path | None:
    """Write `result` (compacted) as <folder>/<key>.pt and its readable twin; nothing without an open record.
    meta: config, code, code_of (as the results cache records them) and facts (`measured`, planned_seconds)."""
    from .. import runtime
    from ..cache import _publish

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
    path = folder / f"{key}.pt"
    _publish(path, folder / f"{key}.json", data, twin)
    ran_on(twin["device"])
    return path


def _keyed_right(key: str, meta: dict) -> bool:
    """Whether twin `meta` describes the entry named `key`: its config and code hash to the key's two last parts (an
    entry copied under another training's key, or a twin edited by hand, does not)."""
    from ..cache import key_of

    try:
        return key_of(key.rsplit("-", 2)[0], meta["config"], meta["code"]) == key
    except (KeyError, TypeError, ValueError):
        return False


def load(key: str, require: tuple[str, ...] = (), folders: list[Path] | None = None) -> tuple[bool, Any]:
    """(True, result) for a verified kept entry named `key` with every member of `require`, else (False, None).
    An entry whose twin does not hash to its key is refused with a warning (copied or edited by hand)."""
    from ..cache import _load, _lock

    for folder in (globals()["folders"]() if folders is None else folders):
        path, twin = folder / f"{key}.pt", folder / f"{key}.json"
        if not path.exists():
            continue
        try:
            meta = json.loads(twin.read_text())
        except (OSError, ValueError):
            meta = {}
        if any(r in meta.get("dropped", ()) for r in require):
            continue  # kept without what the caller needs (its weights): trained again
        if meta and not _keyed_right(key, meta):
            warnings.warn(f"kept training {path} is not the training its name says (its config and code do not hash "
                          "to its key: copied or edited by hand); not used", stacklevel=3)
            continue
        with _lock(folder, exclusive=False):
            found, result = _load(path, twin)
        if found:
            _DEVICES[device_with_stack(meta)] = None
            return True, result
    return False, None


# ----------------------------------------------------------------------------- re-keying (issue 42)

REKEY = "rekey.json"  # in a record folder: the re-key step's proof (romae.runner.rekey), not a training


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


def state(meta: dict) -> str:
    """'current' when an entry is keyed right (`_keyed_right`) and the code it names, by its numbers, is the code's now
    (`romae.numerics`: each library path's fingerprint and each other module's definitions), else 'stale: <why>'
    (what changed), or 'damaged: <why>'."""
    from .. import numerics

    if "key" in meta and not _keyed_right(meta["key"], meta):
        return "damaged: its config and code do not hash to its key (copied or edited by hand): never used"
    made_of = meta.get("code_of")
    if made_of is None:
        return "stale: keyed by the bytes of its modules (before the re-key): carried when a run next asks for it" \
            if meta.get("modules") else "stale: no record of its code"
    changed = [p for p, id_ in made_of.get("numerics", {}).items() if numerics.ids().get(p) != id_]
    root = Path(__file__).resolve().parents[1]
    for rel, digest in made_of.get("definitions", {}).items():
        if not (root / rel).is_file():
            changed.append(f"{rel} (gone)")
        elif numerics.module_digest((root / rel).read_text()) != digest:
            changed.append(rel)
    if changed:
        return "stale: the numbers of " + ", ".join(changed) + " changed"
    return "current"


def table(folder: Path | None = None):
    """One row per kept training: name, state, device, wall time, the plan's estimate and their ratio, peak memory."""
    import pandas as pd

    rows = []
    for m in entries(folder):
        name = m["key"].rsplit("-", 2)[0]
        facts = m.get("facts", {})
        wall, planned = facts.get("wall_seconds"), m.get("planned_seconds")
        rows.append(dict(name=name, key=m["key"], state=state(m), device=m.get("device", ""),
                         wall_seconds=wall, planned_seconds=planned,
                         ratio=round(wall / planned, 2) if wall and planned else None,
                         peak_host_mb=facts.get("peak_host_mb"), peak_cuda_gb=facts.get("peak_cuda_gb"),
                         kept_kb=round(m.get("bytes", 0) / 1024, 1), without=", ".join(m.get("dropped", [])),
                         finished=m.get("finished", "")))
    return pd.DataFrame(rows, columns=["name", "key", "state", "device", "wall_seconds", "planned_seconds", "ratio",
                                       "peak_host_mb", "peak_cuda_gb", "kept_kb", "without", "finished"])


GROUPED = ["name", "device", "trainings", "current", "stale", "wall_hours", "planned_hours", "ratio", "peak_host_mb"]


def grouped(frame):
    """`table` summed per training name and device (a GPU's wall time is never set against the CPU's plan): count,
    current / stale, wall and planned hours, their ratio, peak memory."""
    import pandas as pd

    if frame.empty:
        return pd.DataFrame(columns=GROUPED)
    g = frame.assign(current=frame.state.eq("current"), stale=~frame.state.eq("current"),
                     with_plan=frame.planned_seconds.notna())
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
    parser = argparse.ArgumentParser(prog="python -m romae.compendium.trainings", description=__doc__.split("\n\n")[0])
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
    t = table(folder)
    if t.empty:
        print(f"no kept trainings in {folder}")
        return 0
    import pandas as pd

    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.max_rows", 500):
        print(t.drop(columns=["key"]) if each else grouped(t).to_string(index=False))
    stale = int((t.state != "current").sum())
    damaged = int(t.state.str.startswith("damaged").sum())
    print(f"{len(t)} kept trainings in {folder}: {len(t) - stale} current, {stale - damaged} stale (retrained when next "
          f"run), {damaged} damaged (never used)")
    for i, row in enumerate(t[t.state != "current"].itertuples()):
        if i == 20:
            print(f"  ... and {stale - 20} more (--each lists every training)")
            break
        print(f"  {row.key}: {row.state}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
