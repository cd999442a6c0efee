"""Shared helpers for the dataset loaders: where the data lives, checksums, clear errors, downloads.

Real data sets are never bundled with the package. They live under one data root, given as `root=` to a
loader or named by the environment variable ``ROMAE_DATA``; each loader uses its own sub-folder of it
(e.g. ``<root>/uea/BasicMotions/``). Files are verified against SHA-256 checksums before they are
parsed, either constants in the loader or ``SHA256SUMS`` files (the format written by ``sha256sum``).

    root = data_root()                      # $ROMAE_DATA
    verify_folder(root / "uea", ["BasicMotions/BasicMotions_TRAIN.ts"])
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.request
from pathlib import Path

from tqdm.auto import tqdm

ENV_VAR = "ROMAE_DATA"
CHUNK = 1 << 20  # 1 MiB


def data_root(root: str | Path | None = None) -> Path:
    """The data root: `root` if given, else the folder named by $ROMAE_DATA."""
    if root is not None:
        return Path(root)
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    raise FileNotFoundError(
        f"no data root: pass root=<folder> to the loader or set the environment variable {ENV_VAR} "
        f"to the folder that holds the data sets")


def sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file, streamed (hashlib.file_digest)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


_file_sha256 = sha256  # download_url's `sha256` argument shadows the function


def check_sha256(path: str | Path, expected: str) -> None:
    """Raise ValueError if the file's SHA-256 is not `expected`."""
    actual = sha256(path)
    if actual != expected.strip().lower():
        raise ValueError(
            f"checksum mismatch for {path}: expected SHA-256 {expected}, got {actual}. The file is "
            f"corrupt or was changed; delete it and download it again")


def read_sums(path: str | Path) -> dict[str, str]:
    """Parse a SHA256SUMS file ("HASH  NAME" or, binary mode, "HASH *NAME") into {name: hash}."""
    sums: dict[str, str] = {}
    for lineno, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(maxsplit=1)
        if len(parts) != 2 or len(parts[0]) != 64:
            raise ValueError(f"{path} line {lineno}: expected 'HASH  NAME', got {line!r}")
        digest, name = parts
        sums[name.lstrip("*")] = digest.lower()
    return sums


def add_sums(folder: str | Path, names: list[str]) -> Path:
    """Add (or replace) the SHA-256 lines of `names` (files in `folder`) in `folder/SHA256SUMS`, keeping
    its other lines; written through a temporary file and os.replace, so it is never left half-written."""
    folder = Path(folder)
    sums_file = folder / "SHA256SUMS"
    sums = read_sums(sums_file) if sums_file.is_file() else {}
    sums.update({name: sha256(folder / name) for name in names})
    tmp = folder / ".SHA256SUMS.part"
    tmp.write_text("".join(f"{digest}  {name}\n" for name, digest in sorted(sums.items())))
    os.replace(tmp, sums_file)
    return sums_file


def verify_folder(folder: str | Path, names: list[str] | None = None) -> list[Path]:
    """Check files against `folder/SHA256SUMS`, if that file exists; return the files verified.

    `names` (relative to `folder`, as in SHA256SUMS) restricts the check to those files; names not
    listed in SHA256SUMS are skipped. A listed file that is absent is a FileNotFoundError, a differing
    one a ValueError naming it.
    """
    folder = Path(folder)
    sums_path = folder / "SHA256SUMS"
    if not sums_path.is_file():
        return []
    sums = read_sums(sums_path)
    wanted = sums if names is None else [n for n in names if n in sums]
    verified = []
    for name in wanted:
        path = folder / name
        if not path.is_file():
            raise FileNotFoundError(f"{path} is listed in {sums_path} but does not exist")
        check_sha256(path, sums[name])
        verified.append(path)
    return verified


def missing_file_error(path: str | Path, url: str | None, how: str) -> FileNotFoundError:
    """A FileNotFoundError saying which file was looked for, where it comes from and how to get it."""
    msg = f"data file not found: {path}."
    if url:
        msg += f" Official source: {url}."
    msg += f" To get it: {how}."
    return FileNotFoundError(msg)


def download_url(url: str, dest: str | Path, sha256: str | None = None) -> Path:
    """Download `url` to `dest` (any scheme urllib knows, file:// included), with a progress bar.

    The bytes go to a temporary file beside `dest`, are checked against `sha256` if given, and only
    then renamed onto `dest` (os.replace is atomic), so an interrupted or corrupt download never
    leaves a file under the final name.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url) as response:
            total = response.headers.get("Content-Length")
            with tqdm(total=int(total) if total else None, unit="B", unit_scale=True,
                      desc=dest.name, leave=False) as bar:
                while chunk := response.read(CHUNK):
                    out.write(chunk)
                    bar.update(len(chunk))
        if sha256 is not None and (actual := _file_sha256(tmp)) != sha256.strip().lower():
            raise ValueError(f"download of {url} for {dest} is corrupt: expected SHA-256 {sha256}, "
                             f"got {actual}; try again")
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return dest
