"""Shared helpers for the dataset loaders: where the data lives, checksums, clear errors, downloads.

Real data sets are never bundled with the package. They live under one data root: `root=` given to a
loader, else the folder named by the environment variable ``ROMAE_DATA``, else ``<repository>/data/``
(git-ignored; `make data` downloads there). Each loader uses its own sub-folder of it (e.g.
``<root>/uea/BasicMotions/``). Files are verified against checksums before they are parsed: constants in
the loader, the publisher's own list where there is one, or ``SHA256SUMS`` files (the format written by
``sha256sum``) recorded on first download where the publisher gives none.

    root = data_root()                      # $ROMAE_DATA, else <repo>/data
    verify_folder(root / "uea", ["BasicMotions/BasicMotions_TRAIN.ts"])
    download_url(url, dest, sha256=...)     # resumes an interrupted download, refuses corrupt bytes

A data set that is not there raises `DataMissing` (a FileNotFoundError) naming the path looked at, the
official source and the command that fetches it (`make data NAMES=<name>`, see `romae.data.catalog`).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from tqdm.auto import tqdm

try:
    import fcntl
except ImportError:  # Windows: downloads are not locked there
    fcntl = None

ENV_VAR = "ROMAE_DATA"
CHUNK = 1 << 20  # 1 MiB
# <repository>/data: the default data root of a clone (git-ignored), where `make data` puts what it fetches
DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "data"
TIMEOUT = 60  # seconds without a byte before a download is given up (it resumes on the next try)
_MIRROR: list[str] = []  # set by `mirror()`: where downloads are fetched from instead of the official hosts


class DataMissing(FileNotFoundError):
    """A data set is not under the data root. The message names what was looked for, where, and how to
    fetch it; `names` are its `romae.data.catalog` names (what `make data NAMES=...` takes)."""

    def __init__(self, message: str, names: tuple[str, ...] = ()):
        super().__init__(message)
        self.names = tuple(names)


def data_root(root: str | Path | None = None) -> Path:
    """The data root: `root` if given, else the folder named by $ROMAE_DATA, else <repository>/data."""
    if root is not None and str(root) != "":
        return Path(root)
    env = os.environ.get(ENV_VAR)
    return Path(env) if env else DEFAULT_ROOT


def describe_root(root: str | Path | None = None) -> str:
    """Where the data root comes from, for messages: 'root=...', '$ROMAE_DATA=...' or the default."""
    if root is not None and str(root) != "":
        return f"root={root}"
    env = os.environ.get(ENV_VAR)
    return f"${ENV_VAR}={env}" if env else f"{DEFAULT_ROOT} (the default; set ${ENV_VAR} to use another folder)"


def fetch_command(names) -> str:
    """The command that downloads catalog data sets `names` into the data root."""
    names = [names] if isinstance(names, str) else list(names)
    return f"make data NAMES={','.join(names)}"


def digest(path: str | Path, algorithm: str = "sha256") -> str:
    """Hex digest of a file (sha256, md5, ...), streamed (hashlib.file_digest)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, algorithm).hexdigest()


def sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file."""
    return digest(path, "sha256")


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


def missing_file_error(path: str | Path, url: str | None, how: str, names=()) -> DataMissing:
    """A DataMissing saying which file was looked for, where it comes from and how to get it; with catalog
    `names`, the make command that fetches it comes first."""
    names = (names,) if isinstance(names, str) else tuple(names)
    msg = f"data file not found: {path}."
    if url:
        msg += f" Official source: {url}."
    if names:
        msg += f" To get it: `{fetch_command(names)}` (downloads into the data root), or {how}."
    else:
        msg += f" To get it: {how}."
    return DataMissing(msg, names)


class IncompleteDownload(OSError):
    """The connection ended before the whole file arrived; what did arrive is kept and the next try resumes."""


@contextlib.contextmanager
def _download_lock(dest: Path):
    """One download of `dest` at a time (an flock on <dest>.lock, dropped by the kernel if the process dies)."""
    if fcntl is None:
        yield
        return
    path = dest.with_name(f".{dest.name}.lock")
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            raise RuntimeError(f"another process ({f.read().strip() or 'pid ?'}) is downloading {dest}; wait for it "
                               "to finish") from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}\n")
        f.flush()
        try:
            yield
        finally:
            path.unlink(missing_ok=True)


@contextlib.contextmanager
def mirror(base: str | None):
    """Within the block, fetch every download from a mirror of the official files instead (e.g. an
    institution's copy, or a local folder for an offline machine): <base>/<host>/<path> for the official
    https://<host>/<path> (the query dropped). `python -m romae.data fetch --mirror` and `make data
    MIRROR=` use it; None or "" changes nothing. Checksums are checked as for the official host."""
    if not base:
        yield
        return
    _MIRROR.append(base.rstrip("/"))
    try:
        yield
    finally:
        _MIRROR.pop()


def mirrored(url: str) -> str:
    """`url` as the current mirror serves it (unchanged outside `mirror()`)."""
    if not _MIRROR:
        return url
    parts = urllib.parse.urlsplit(url)
    return f"{_MIRROR[-1]}/{parts.netloc}{parts.path}"


def _open(url: str, offset: int):
    """(response, resumed): a Range request from `offset` where the scheme allows one."""
    ranged = offset > 0 and url.split(":", 1)[0].lower() in ("http", "https")
    req = urllib.request.Request(url, headers={"Range": f"bytes={offset}-", "User-Agent": "romae"} if ranged
                                 else {"User-Agent": "romae"})
    try:
        resp = urllib.request.urlopen(req, timeout=TIMEOUT)
    except urllib.error.HTTPError as e:
        if e.code == 416 and ranged:  # the part is already as long as the file (or longer): start over
            return _open(url, 0)
        raise
    resumed = ranged and getattr(resp, "status", 200) == 206
    return resp, resumed


def _expected_size(resp, offset: int, resumed: bool) -> int | None:
    """Total size of the file from the headers (Content-Range of a 206, else Content-Length), or None."""
    if resumed:
        total = (resp.headers.get("Content-Range") or "").rpartition("/")[2]
        if total.isdigit():
            return int(total)
        length = resp.headers.get("Content-Length")
        return offset + int(length) if length and length.isdigit() else None
    length = resp.headers.get("Content-Length")
    return int(length) if length and length.isdigit() else None


def download_url(url: str, dest: str | Path, sha256: str | None = None, md5: str | None = None,
                 progress: bool = True) -> Path:
    """Download `url` to `dest` (any scheme urllib knows, file:// included) with a progress bar.

    The bytes go to `<dest>.part` beside it. If that exists from an interrupted try, an HTTP(S) download
    resumes from its end (a Range request; a server that ignores it restarts from 0). A connection that
    ends before the announced size raises IncompleteDownload and keeps the part for the next try. The
    whole file is then checked against `sha256` / `md5` if given: a mismatch deletes the part (the next
    try starts afresh) and raises ValueError. Only a complete, verified file is renamed onto `dest`
    (os.replace is atomic), so `dest` never holds a partial or corrupt download.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    url = mirrored(url)
    with _download_lock(dest):
        offset = part.stat().st_size if part.is_file() else 0
        resp, resumed = _open(url, offset)
        with resp:
            if not resumed:
                offset = 0
            total = _expected_size(resp, offset, resumed)
            received = offset
            with open(part, "ab" if resumed else "wb") as out, \
                    tqdm(total=total, initial=offset, unit="B", unit_scale=True, desc=dest.name, leave=False,
                         disable=not progress) as bar:
                try:
                    while chunk := resp.read(CHUNK):
                        out.write(chunk)
                        received += len(chunk)
                        bar.update(len(chunk))
                except (http.client.IncompleteRead, ConnectionError, TimeoutError) as e:
                    out.flush()
                    raise IncompleteDownload(f"download of {url} broke off after {received:,} of "
                                             f"{total or '?':,} bytes ({type(e).__name__}); the bytes so far are kept "
                                             f"in {part}: run the same command again to resume") from None
        if total is not None and received != total:
            if received > total:  # more than announced: not the file we think, start afresh next time
                part.unlink(missing_ok=True)
            raise IncompleteDownload(f"download of {url} ended after {received:,} of {total:,} bytes; "
                                     + (f"the bytes so far are kept in {part}: run the same command again to resume"
                                        if received < total else "removed it: run the same command again"))
        for algorithm, expected in (("sha256", sha256), ("md5", md5)):
            if expected is not None and (actual := digest(part, algorithm)) != expected.strip().lower():
                part.unlink()
                shown = {"sha256": "SHA-256", "md5": "MD5"}[algorithm]
                raise ValueError(f"download of {url} for {dest} is corrupt: expected {shown} {expected}, "
                                 f"got {actual}; removed it: run the same command again to download it afresh")
        os.replace(part, dest)
    return dest


def fetch_archive(url: str, archive: str | Path, unpack, *, what: str = "archive", sha256: str | None = None,
                  md5: str | None = None, record: bool = True, progress: bool = True) -> None:
    """Download `archive` from `url` unless it is there (a cut download resumes; checksums as in
    `download_url`), `unpack(archive)`, then delete it. An archive that does not unpack (a bad zip or tar,
    a member missing: `unpack` raises ValueError) is removed with a ValueError naming it, so the next try
    downloads it afresh. `record`: its SHA-256 is added to SHA256SUMS first (trust on first use, for
    archives whose publisher gives no checksum)."""
    import tarfile
    import zipfile

    archive = Path(archive)
    if not archive.is_file():
        download_url(url, archive, sha256=sha256, md5=md5, progress=progress)
    try:
        unpack(archive)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, ValueError) as e:
        archive.unlink(missing_ok=True)
        raise ValueError(f"{archive} (from {url}) is not a usable {what} ({e}); removed it: try again") from None
    if record:
        add_sums(archive.parent, [archive.name])
    archive.unlink()


def published_sums(url: str) -> dict[str, str]:
    """{name: sha256} from a publisher's SHA256SUMS list at `url` (e.g. PhysioNet's SHA256SUMS.txt);
    empty if it cannot be fetched or read (the caller then records the checksum on first use)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(mirrored(url), headers={"User-Agent": "romae"}),
                                    timeout=TIMEOUT) as resp:
            text = resp.read().decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return {}
    sums = {}
    for line in text.splitlines():
        parts = line.strip().split(maxsplit=1)
        if len(parts) == 2 and len(parts[0]) == 64:
            sums[parts[1].lstrip("*").strip()] = parts[0].lower()
    return sums
