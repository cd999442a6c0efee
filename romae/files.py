"""Files written whole or not at all, and their digests: what the library's caches, stores and checkpoints share
with the data loaders (`romae.data.files` re-exports them beside its download and checksum machinery)."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

CHUNK = 1 << 20  # 1 MiB


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
