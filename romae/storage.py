"""Files written whole or not at all, and their digests: what the library's caches, stores and checkpoints share
with the data loaders (`romae.data.files` re-exports them beside its download and checksum machinery). Also the
storage of keyed results under <repo>/.cache/romae/ (git-ignored): a .pt (torch.save) beside a .json twin that
records its sha256, verified before unpickling, published under a lock so a reader never sees half an entry; and
`memo`, which a data loader keys by its parameters and its own source (`romae.compendium.cache` keys the compendium's
results by the code they run).

    data = memo("pendulum_data", cfg, compute, sources=(__file__,))
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import tempfile
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

try:
    import fcntl
except ImportError:  # no advisory locks (Windows): a lost race then shows as a hash mismatch, recomputed
    fcntl = None

CHUNK = 1 << 20  # 1 MiB
CACHE = Path(__file__).resolve().parents[1] / ".cache" / "romae"  # the local results (git-ignored)


def digest(path: str | Path, algorithm: str = "sha256") -> str:
    """Hex digest of a file (sha256, md5, ...), streamed (hashlib.file_digest)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, algorithm).hexdigest()


def sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file."""
    return digest(path, "sha256")


def write_atomic(path: str | Path, content: str | bytes) -> Path:
    """Write `content` (text as UTF-8, line endings as given) to `path` through a unique temporary file in
    the same folder and os.replace: a reader, or another process writing the same file, never sees it half
    written, and a kill leaves the old file. The one atomic writer of the package (reports, caches, stores)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content.encode("utf-8") if isinstance(content, str) else content)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def tensor_digest(h, value) -> None:
    """Feed a tensor / array (dtype, shape, bytes) or any other value (its repr) into hashlib object `h`."""
    import numpy as np
    import torch

    if torch.is_tensor(value):
        value = value.detach().cpu().contiguous()
        h.update(f"{value.dtype}{tuple(value.shape)}".encode())
        h.update(value.reshape(-1).view(torch.uint8).numpy().tobytes() if value.numel() else b"")
    elif isinstance(value, np.ndarray):
        value = np.ascontiguousarray(value)
        h.update(f"{value.dtype}{value.shape}".encode())
        h.update(value.view(np.uint8).reshape(-1).tobytes() if value.size and value.dtype != object else repr(value.tolist()).encode())
    else:
        h.update(repr(value).encode())


def describe_callable(fn) -> str:
    """What a key can say of a callable (an augmentation, a filter): its qualified name and the plain values it
    closes over; '' for None."""
    if fn is None:
        return ""
    cells = [c.cell_contents for c in (getattr(fn, "__closure__", None) or ())]
    plain = [c for c in cells if isinstance(c, (int, float, str, bool, tuple))]
    return f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__name__)}{plain}"


# ----------------------------------------------------------------------------- keyed results

def _faithful(obj: Any) -> Any:
    """JSON stand-in for what json cannot write, keeping everything that tells two keys apart: arrays,
    tensors and tables by a hash of their contents (str() of a large array elides its middle, so two
    different subsets would share a key); anything without a faithful form is refused (TypeError)."""
    import numpy as np
    import torch

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
    import torch

    try:
        return None, "", torch.load(io.BytesIO(data), weights_only=False)
    except Exception as e:  # noqa: BLE001 -- whatever unpickling raises
        return "corrupted", f"{type(e).__name__}: {e}", None


def _unusable(path: Path, verdict: str, reason: str) -> tuple[bool, None]:
    warnings.warn(f"results cache entry {path} is {verdict} ({reason}); recomputing", stacklevel=4)
    return False, None


OUTDATED: Callable[[Path], str] | None = None  # set by the compendium: why a verified entry's twin no longer holds
#                                                (code its key does not name changed: what it ran on CUDA), or ''


def lookup(folder: Path, key: str) -> tuple[bool, Any]:
    """(True, result) for a verified entry <folder>/<key>.pt, else (False, None) (a warning when it is damaged; an
    entry `OUTDATED` refuses is recomputed)."""
    path, twin = folder / f"{key}.pt", folder / f"{key}.json"
    if not path.exists():
        return False, None
    with _lock(folder, exclusive=False):
        found, result = _load(path, twin)
    if found and OUTDATED is not None and OUTDATED(twin):
        return False, None
    return found, result


def store(folder: Path, key: str, result: Any, meta: dict) -> bytes:
    """Write `result` as <folder>/<key>.pt with its twin (meta + the sha256 of the bytes) -> the bytes written."""
    import torch

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


def key_of(name: str, config: Any, code: str) -> str:
    """An entry's file stem: <name>-<config hash>-<code hash>."""
    return f"{name}-{config_hash(config)}-{hashlib.sha256(code.encode()).hexdigest()[:8]}"


def keyed(name: str, config: Any, compute: Callable[[], Any], code: str, folder: str | Path | None = None,
          refresh: bool = False, meta: dict | None = None) -> Any:
    """compute()'s result stored under `folder` (default `CACHE`) as entry `key_of(name, config, code)`, computed only
    when no verified entry exists (or `refresh`); its twin holds config, code, `meta` and the sha256. A dry run
    (`romae.runtime`) neither reads nor writes it."""
    from . import runtime

    if runtime.dry_run():  # a dry run's few steps are never read from nor written to a cache
        return compute()
    folder = Path(folder) if folder else CACHE
    key = key_of(name, config, code)
    if not refresh:
        found, result = lookup(folder, key)
        if found:
            return result
    result = compute()
    store(folder, key, result, {"config": json.loads(key_json(config)), "code": code, **(meta or {})})
    return result


def memo(name: str, config: Any, compute: Callable[[], Any], *, sources: tuple = (), folder: str | Path | None = None,
         refresh: bool = False) -> Any:
    """compute()'s result kept by `keyed`, its code the bytes of the files `sources` (a data loader's own module: an
    edit of it parses or generates anew): a parsed or generated data set."""
    return keyed(name, config, compute, "".join(sha256(s) for s in sources), folder, refresh)
