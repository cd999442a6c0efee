"""Results cache: heavy work is keyed by a hash of its resolved config, so re-running a notebook to
restyle a figure does not retrain. Entries live under <repo>/.cache/romae/ (git-ignored).

    result = cached("table1", cfg_dict, lambda: train_and_evaluate(cfg))

An entry is <name>-<config hash>-<code hash>.pt (torch.save of the result) + a .json twin
{"config", "code", "sha256"}.

Code version: the key includes a hash of the package modules that produced the result (`producers`): the
romae modules on the call stack of `cached` and the module of `compute`, with every romae module they import,
directly or not, anywhere in their source (`module_closure`, read from the source, not from what happens to be
imported). So an edit to a module that can change the result recomputes instead of reusing a stale one, and an
edit elsewhere (the audio code, for a pendulum model) does not. Code outside the package (a notebook cell) is
not covered: put what matters in the config, or pass `code=` (also for a narrower hash).

Integrity: the twin records the sha256 of the .pt bytes, verified before unpickling. A missing twin, one
without a hash (older format), a mismatch or a load error is reported by `warnings.warn` naming the file,
and the entry is recomputed and overwritten. Files are written under unique temporary names and renamed
into place, under a lock, in the order given in `_publish`.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import io
import json
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

import torch

from . import runtime
from .compendium import trainings
from .data.files import write_atomic


try:
    import fcntl
except ImportError:  # no advisory locks (Windows): a lost race then shows as a hash mismatch, recomputed
    fcntl = None

CACHE = Path(__file__).resolve().parents[1] / ".cache" / "romae"
PACKAGE = Path(__file__).resolve().parent

# Modules left out of the code version because they cannot change a cached result: report.py and
# reproduce.py only write reports from results already computed, and cache.py stores results without
# changing them (verified byte for byte) -- a format change there shows as an unverifiable twin and
# is recomputed anyway; trainings.py keeps copies of them the same way. plan.py and cost.py only estimate
# time and memory and lay a training out in memory and time (micro-batches, checkpoints: never in a key);
# a setting they choose (a quick profile's steps) is in the key itself, so recalibrating the time model
# keeps every result. Their imports are not followed either. bench.py stays IN: its table9 produces the
# cached Table 9 timings.
NOT_RESULTS = frozenset({"report.py", "reproduce.py", "cache.py", "trainings.py", "plan.py", "cost.py"})


def _faithful(obj: Any) -> Any:
    """JSON stand-in for what json cannot write, keeping everything that tells two keys apart: arrays,
    tensors and tables by a hash of their contents (str() of a large array elides its middle, so two
    different subsets would share a key); anything without a faithful form is refused (TypeError)."""
    import numpy as np

    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (np.generic,)):
        return obj.item()
    if isinstance(obj, (bytes, bytearray)):
        return {"__bytes__": hashlib.sha256(bytes(obj)).hexdigest()}
    if isinstance(obj, np.ndarray):
        if obj.dtype == object:
            return {"__objects__": [_faithful(x) if not isinstance(x, (str, int, float, bool, type(None))) else x
                                    for x in obj.reshape(-1).tolist()], "shape": list(obj.shape)}
        data = np.ascontiguousarray(obj)
        return {"__ndarray__": str(data.dtype), "shape": list(data.shape),
                "sha256": hashlib.sha256(data.view(np.uint8).reshape(-1).tobytes() if data.size else b"").hexdigest()}
    if torch.is_tensor(obj):
        t = obj.detach().cpu().contiguous().reshape(-1)
        return {"__tensor__": str(obj.dtype), "shape": list(obj.shape),
                "sha256": hashlib.sha256(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"").hexdigest()}
    if isinstance(obj, (torch.dtype, torch.device)):
        return str(obj)
    if isinstance(obj, (set, frozenset)):
        return {"__set__": sorted(json.dumps(x, sort_keys=True, default=_faithful) for x in obj)}
    try:
        import pandas as pd

        if isinstance(obj, (pd.DataFrame, pd.Series, pd.Index)):
            h = pd.util.hash_pandas_object(obj, index=not isinstance(obj, pd.Index)).to_numpy()
            cols = list(map(str, obj.columns)) if isinstance(obj, pd.DataFrame) else [str(obj.name)]
            return {"__pandas__": type(obj).__name__, "columns": cols, "sha256": hashlib.sha256(h.tobytes()).hexdigest()}
    except ImportError:
        pass
    import datetime
    import enum

    if isinstance(obj, enum.Enum):
        return _faithful(obj.value) if not isinstance(obj.value, (str, int, float, bool)) else obj.value
    if isinstance(obj, (datetime.date, datetime.datetime, datetime.timedelta)):
        return str(obj)
    raise TypeError(f"a cache key cannot hold a {type(obj).__name__} faithfully ({str(obj)[:60]!r}); put in the key "
                    "what identifies it: its contents as an array or tensor, or a string or number that names it")


def key_json(config: Any) -> str:
    """Stable JSON of a cache key: dataclasses, dicts, lists, numbers, strings; arrays, tensors and pandas
    objects by the hash of their contents; anything else refused (`_faithful`, which takes dataclasses too)."""
    return json.dumps(config, sort_keys=True, default=_faithful)


def config_hash(config: Any) -> str:
    """Short stable hash of a (nested) config dataclass or dict (`key_json`)."""
    return hashlib.sha256(key_json(config).encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=None)
def code_version(root: str | Path | None = None, modules: tuple[str, ...] | None = None) -> str:
    """sha256 over the sorted relative paths and bytes of <root>/**/*.py (root: this package), minus
    NOT_RESULTS at its top level; `modules`: only these files (paths relative to root, e.g. 'model.py',
    'experiments/pendulum.py'). Computed once per process, root and modules (`code_version.cache_clear()`)."""
    root = Path(root) if root is not None else PACKAGE
    files = (sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")) if modules is None
             else sorted(set(modules)))
    h = hashlib.sha256()
    for rel in files:
        if rel in NOT_RESULTS or "__pycache__" in rel.split("/"):
            continue
        data = (root / rel).read_bytes()
        h.update(b"%s\0%d\0" % (rel.encode(), len(data)) + data)
    return h.hexdigest()


def _module_file(name: str, root: Path) -> str | None:
    """'romae.experiments.pendulum' -> 'experiments/pendulum.py' (or '<pkg>/__init__.py'), None if not ours."""
    parts = name.split(".")
    if parts[0] != root.name:
        return None
    rel = Path(*parts[1:]) if len(parts) > 1 else Path()
    if (root / rel).with_suffix(".py").is_file() and len(parts) > 1:
        return rel.with_suffix(".py").as_posix()
    if (root / rel / "__init__.py").is_file():
        return (rel / "__init__.py").as_posix()
    return None


def _imports(rel: str, root: Path) -> set[str]:
    """The package modules one file imports anywhere in its source (top level or inside functions):
    `import pkg.a.b` -> a/b.py; `from .a import b` -> a/b.py if b is a module, else a.py (or a/__init__.py)
    where the name b is defined."""
    parts = [root.name, *Path(rel).with_suffix("").parts]
    package = parts[:-1]  # the package a relative import starts from (an __init__'s own package too)
    out: set[str] = set()
    for node in ast.walk(ast.parse((root / rel).read_text(), filename=rel)):
        if isinstance(node, ast.Import):
            out.update(f for f in (_module_file(a.name, root) for a in node.names) if f)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)] + ([node.module] if node.module else [])
                base = ".".join(base)
            else:
                base = node.module or ""
            for a in node.names:
                f = _module_file(f"{base}.{a.name}", root) or _module_file(base, root)
                if f:
                    out.add(f)
    out.discard(rel)
    return out


@functools.lru_cache(maxsize=None)
def module_closure(files: tuple[str, ...], root: str | Path | None = None) -> tuple[str, ...]:
    """`files` (paths relative to the package root) with every package module they import, transitively,
    read from their source. The package's __init__ counts only when a name is imported from it."""
    root = Path(root) if root is not None else PACKAGE
    seen: set[str] = set()
    todo = [f for f in files if (root / f).is_file()]
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        if rel not in NOT_RESULTS:  # what a module that cannot change a result imports does not count through it
            todo.extend(_imports(rel, root) - seen)
    return tuple(sorted(seen))


def producers(compute: Callable | None = None, depth: int = 2, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The package modules that produce a result: those on the call stack above `depth` frames (the caller of
    `cached` and its callers: an experiment, the training loop), the module of `compute` and the `extra`
    module names (e.g. a model class's), with their imports (`module_closure`)."""
    names = set(extra)
    frame = sys._getframe(depth)
    while frame is not None:
        names.add(frame.f_globals.get("__name__", ""))
        frame = frame.f_back
    if compute is not None:
        names.add(getattr(compute, "__module__", "") or "")
    files = {f for f in (_module_file(n, PACKAGE) for n in names if n) if f is not None}
    return module_closure(tuple(sorted(files)))


@contextmanager
def _lock(folder: Path, exclusive: bool):
    """Advisory lock on <folder>/.lock: writers publish a .pt and its twin as one step for readers."""
    try:
        f = open(folder / ".lock", "a") if fcntl is not None else None
    except OSError:  # a read-only cache folder: readers go without
        f = None
    if f is None:
        yield
        return
    with f:
        fcntl.flock(f, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield  # released when the file is closed


def _load(path: Path, twin: Path) -> tuple[bool, Any]:
    """(True, result) for a verified entry, else (False, None) -- with a warning unless simply absent."""
    if not path.exists():
        return False, None
    try:
        meta = json.loads(twin.read_text())
        expected = meta.get("sha256") if isinstance(meta, dict) else None
        data = path.read_bytes()
    except FileNotFoundError as e:
        return _unusable(path, "unverifiable", f"{Path(e.filename or twin).name} is missing")
    except (OSError, ValueError) as e:  # unreadable, or a damaged .json
        return _unusable(path, "corrupted", f"{type(e).__name__}: {e}")
    if expected is None:
        return _unusable(path, "unverifiable", f"{twin.name} records no sha256 (older format)")
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        return _unusable(path, "corrupted", f"sha256 {actual[:12]}, {twin.name} says {str(expected)[:12]}")
    try:
        return True, torch.load(io.BytesIO(data), weights_only=False)
    except Exception as e:  # noqa: BLE001 -- whatever unpickling raises
        return _unusable(path, "corrupted", f"{type(e).__name__}: {e}")


def _unusable(path: Path, verdict: str, reason: str) -> tuple[bool, None]:
    warnings.warn(f"results cache entry {path} is {verdict} ({reason}); recomputing", stacklevel=4)
    return False, None


def _device_of(twin: Path) -> str | None:
    """The device a results-cache entry's twin names (a training's), or None (older entries, other results)."""
    try:
        device = json.loads(twin.read_text()).get("device")
    except (OSError, ValueError, AttributeError):
        return None
    return device if isinstance(device, str) and device else None


def _publish(path: Path, twin: Path, data: bytes, meta: dict) -> None:
    """Remove the old twin, move the .pt into place, then the twin: a crash in between leaves a .pt with
    no twin (unverifiable, recomputed), never a twin whose hash vouches for the wrong bytes."""
    with _lock(path.parent, exclusive=True):
        twin.unlink(missing_ok=True)
        write_atomic(path, data)
        write_atomic(twin, (json.dumps(meta, sort_keys=True, indent=1, default=str) + "\n").encode())


def cached(name: str, config: Any, compute: Callable[[], Any], cache_dir: str | Path | None = None,
           refresh: bool = False, *, code: str | None = None, modules: tuple[str, ...] | None = None,
           keep: bool = False, require: tuple[str, ...] = (), planned: float | None = None) -> Any:
    """Return compute()'s result for `config` and the code that produced it, computing it only if no
    verified entry exists (or `refresh`).

    The result (anything torch.save can store: dicts, tensors, lists, numbers) is stored beside its
    config, code version and sha256. `code`: the code version to key on (default: the hash of the modules
    that produce it, `producers`; the twin lists them). `modules`: with `code`, the modules it hashes (listed).
    """
    if runtime.dry_run():  # a dry run's few steps are never read from nor written to the cache
        return compute()
    folder = Path(cache_dir) if cache_dir else CACHE
    if code is None:
        modules = producers(compute)
        code = code_version(modules=modules)
    key = f"{name}-{config_hash(config)}-{hashlib.sha256(code.encode()).hexdigest()[:8]}"
    path, twin = folder / f"{key}.pt", folder / f"{key}.json"
    if not refresh and path.exists():
        with _lock(folder, exclusive=False):
            found, result = _load(path, twin)
        if found:
            if keep:  # a training from a results cache: on the device its entry names (entries before: this one)
                trainings.ran_on(_device_of(twin))
            return result
    if keep and not refresh:
        found, result = trainings.load(key, require)
        if found:
            return result
    facts = None
    if keep:
        with trainings.measured() as facts:
            result = compute()
    else:
        result = compute()
    buf = io.BytesIO()
    torch.save(result, buf)
    data = buf.getvalue()
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"config": json.loads(key_json(config)), "code": code, "sha256": hashlib.sha256(data).hexdigest()}
    if modules is not None:
        meta["modules"] = list(modules)
    if keep:  # a training names the device it ran on, wherever its entry is read later
        meta["device"] = trainings.ran_on()
    _publish(path, twin, data, meta)
    if keep:
        trainings.save(key, result, dict({k: v for k, v in meta.items() if k != "device"}, facts=facts,
                                         planned_seconds=planned))
    return result
