"""Results cache: heavy work is keyed by its resolved config and by the numbers of the code that computes it, so
re-running a notebook to restyle a figure does not retrain. Entries live under <repo>/.cache/romae/ (git-ignored).

    result = cached("table1", cfg_dict, lambda: train_and_evaluate(cfg))

An entry is <name>-<config hash>-<code hash>.pt (torch.save of the result) + a .json twin
{"config", "code", "code_of", "sha256"}.

Code: the key's last part names the code that produced the result: by default the bytes of the package modules on
the call stack of `cached` and of the module of `compute`, with every package module they import (`module_closure`,
read from the source): any edit of them computes anew (this cache is local: a data loader's parsed files, a
measurement). Results kept for a paper run are keyed by the numbers-or-hash rule instead
(`romae.compendium.kept`, `romae.compendium.staleness`), so an edit that cannot change a number keeps them. Code
outside the package (a notebook cell) is not covered: put what matters in the config, or pass `code=`.

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
from .files import write_atomic


try:
    import fcntl
except ImportError:  # no advisory locks (Windows): a lost race then shows as a hash mismatch, recomputed
    fcntl = None

CACHE = Path(__file__).resolve().parents[1] / ".cache" / "romae"
PACKAGE = Path(__file__).resolve().parent

# package folders never followed into a key: they record, judge, tell and lay out results, they never compute one
# (a result's own modules are the library's, the data loaders' and the experiments')
NOT_IN_KEYS = ("compendium/", "runner/")
OWN = ("cache.py", "files.py", "numerics.py")  # how results are stored and keyed: never in a key


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
    read from their source, minus those that cannot change a result (`_counts`)."""
    root = Path(root) if root is not None else PACKAGE
    seen: set[str] = set()
    todo = [f for f in files if (root / f).is_file()]
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        if _counts(rel):  # what a module that cannot change a result imports does not count through it
            todo.extend(_imports(rel, root) - seen)
    return tuple(sorted(f for f in seen if _counts(f)))


def _counts(rel: str) -> bool:
    """Whether package file `rel` can change a cached result (`NOT_IN_KEYS`, `OWN`)."""
    return not rel.startswith(NOT_IN_KEYS) and rel not in OWN


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
    verdict, reason, result = verified(path, twin)
    if verdict is not None:
        return _unusable(path, verdict, reason)
    return True, result


def verified(path: Path, twin: Path) -> tuple[str | None, str, Any]:
    """(None, "", result) for an entry whose .pt has the sha256 its twin records and unpickles, else (verdict, reason,
    None): 'unverifiable' (a file missing, a twin without a hash) or 'corrupted' (a mismatch, an unreadable file or
    twin, a load error). Warns of nothing: `_load` (the results cache) and `romae.compendium.trainings.check` (the
    record of trainings) say it their way."""
    try:
        meta = json.loads(twin.read_text())
        expected = meta.get("sha256") if isinstance(meta, dict) else None
        data = path.read_bytes()
    except FileNotFoundError as e:
        return "unverifiable", f"{Path(e.filename or twin).name} is missing", None
    except (OSError, ValueError) as e:  # unreadable, or a damaged .json
        return "corrupted", f"{type(e).__name__}: {e}", None
    if expected is None:
        return "unverifiable", f"{twin.name} records no sha256 (older format)", None
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        return "corrupted", f"sha256 {actual[:12]}, {twin.name} says {str(expected)[:12]}", None
    try:
        return None, "", torch.load(io.BytesIO(data), weights_only=False)
    except Exception as e:  # noqa: BLE001 -- whatever unpickling raises
        return "corrupted", f"{type(e).__name__}: {e}", None


def _unusable(path: Path, verdict: str, reason: str) -> tuple[bool, None]:
    warnings.warn(f"results cache entry {path} is {verdict} ({reason}); recomputing", stacklevel=4)
    return False, None


def key_of(name: str, config: Any, code: str) -> str:
    """An entry's file stem: <name>-<config hash>-<code hash>."""
    return f"{name}-{config_hash(config)}-{hashlib.sha256(code.encode()).hexdigest()[:8]}"


def code_for(modules: tuple[str, ...]) -> tuple[str, dict]:
    """(the code string a key hashes, what it is made of: {"modules": {file: sha256}}) for package modules
    `modules`: their bytes."""
    made_of = {"modules": {m: hashlib.sha256((PACKAGE / m).read_bytes()).hexdigest()[:16]
                           for m in sorted(modules) if _counts(m) and (PACKAGE / m).is_file()}}
    return hashlib.sha256(json.dumps(made_of, sort_keys=True).encode()).hexdigest(), made_of


def lookup(folder: Path, key: str) -> tuple[bool, Any]:
    """(True, result) for a verified entry <folder>/<key>.pt, else (False, None) (a warning when it is damaged)."""
    path, twin = folder / f"{key}.pt", folder / f"{key}.json"
    if not path.exists():
        return False, None
    with _lock(folder, exclusive=False):
        return _load(path, twin)


def store(folder: Path, key: str, result: Any, meta: dict) -> bytes:
    """Write `result` as <folder>/<key>.pt with its twin (meta + the sha256 of the bytes) -> the bytes written."""
    buf = io.BytesIO()
    torch.save(result, buf)
    data = buf.getvalue()
    folder.mkdir(parents=True, exist_ok=True)
    _publish(folder / f"{key}.pt", folder / f"{key}.json", data, dict(meta, sha256=hashlib.sha256(data).hexdigest()))
    return data


def _publish(path: Path, twin: Path, data: bytes, meta: dict) -> None:
    """Remove the old twin, move the .pt into place, then the twin: a crash in between leaves a .pt with
    no twin (unverifiable, recomputed), never a twin whose hash vouches for the wrong bytes."""
    with _lock(path.parent, exclusive=True):
        twin.unlink(missing_ok=True)
        write_atomic(path, data)
        write_atomic(twin, (json.dumps(meta, sort_keys=True, indent=1, default=str) + "\n").encode())


def cached(name: str, config: Any, compute: Callable[[], Any], cache_dir: str | Path | None = None,
           refresh: bool = False, *, code: str | None = None, depth: int = 2) -> Any:
    """Return compute()'s result for `config` and the code that produced it, computing it only if no
    verified entry exists (or `refresh`).

    The result (anything torch.save can store: dicts, tensors, lists, numbers) is stored beside its
    config, code and sha256. `code`: what to key the code on (default: the numbers of the modules that produce it,
    `producers` and `code_for`; the twin lists them under code_of). A dry run (`romae.runtime`) neither reads nor
    writes the cache.
    """
    if runtime.dry_run():  # a dry run's few steps are never read from nor written to the cache
        return compute()
    folder = Path(cache_dir) if cache_dir else CACHE
    made_of = None
    if code is None:
        code, made_of = code_for(producers(compute, depth=depth))
    key = key_of(name, config, code)
    if not refresh:
        found, result = lookup(folder, key)
        if found:
            return result
    result = compute()
    meta = {"config": json.loads(key_json(config)), "code": code}
    if made_of is not None:
        meta["code_of"] = made_of
    store(folder, key, result, meta)
    return result
