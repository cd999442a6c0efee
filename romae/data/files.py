"""Shared helpers for the dataset loaders: where the data lives, checksums, clear errors, downloads.

Real data sets are never bundled with the package. They live under one data root: `root=` given to a
loader, else the folder named by the environment variable ``ROMAE_DATA``, else ``<repository>/data/``
(git-ignored; `make data` downloads there). Each loader uses its own sub-folder of it (e.g.
``<root>/uea/BasicMotions/``). Files are verified against checksums before they are parsed: constants in
the loader, the publisher's own list where there is one, or ``SHA256SUMS`` files (the format written by
``sha256sum``) recorded on first download where the publisher gives none. A known checksum always wins: a
download is checked against it whatever a mirror serves, and a SHA256SUMS line never overrides it.

A file that fails its checksum is moved aside to ``<name>.corrupt`` (`quarantine`) and `ChecksumMismatch` names
it, both checksums and the command that fetches it again; presence checks (`intact`, what `make data` calls
"already here") do not count such a file, so the next `make data` downloads it afresh. Presence checks
remember a file's digest by its size and mtime in ``.verified.json`` beside it, so an unchanged file is hashed
once, not on every check; loaders always hash in full. A folder without write permission (a shared, read-only
data folder) is never written to: nothing is remembered or moved there.

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
import json
import os
import stat
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
from pathlib import Path

from tqdm.auto import tqdm

from ..storage import CACHE, CHUNK, config_hash, digest, memo, sha256, write_atomic  # the library's own: re-exported for the loaders

try:
    import fcntl
except ImportError:  # Windows: downloads are not locked there
    fcntl = None

ENV_VAR = "ROMAE_DATA"
# <repository>/data: the default data root of a clone (git-ignored), where `make data` puts what it fetches
DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "data"
TIMEOUT = 60  # seconds without a byte before a download is given up (it resumes on the next try)
_MIRROR: list[str] = []  # set by `mirror()`: where downloads are fetched from instead of the official hosts
VERIFIED = ".verified.json"  # in a data folder: {file: {size, mtime_ns, sha256 | md5}}, see `cached_digest`
SETTLED_NS = 2_000_000_000  # a file changed less than 2 s ago is not remembered (its mtime may not tick again)
_DIGESTS: dict[tuple, str] = {}  # the same memory within this process (also for read-only folders)
_SHOWN = {"sha256": "SHA-256", "md5": "MD5"}


class DataMissing(FileNotFoundError):
    """A data set is not under the data root. The message names what was looked for, where, and how to
    fetch it; `names` are its `romae.data.catalog` names (what `make data NAMES=...` takes)."""

    def __init__(self, message: str, names: tuple[str, ...] = ()):
        super().__init__(message)
        self.names = tuple(names)


class ChecksumMismatch(ValueError):
    """A file differs from its known or recorded checksum. It has been moved aside (`quarantine`, `moved`; None
    where that was not possible), so it no longer counts as present and the next fetch downloads it afresh;
    the message names the file, both checksums and the command. `names`: its catalog names."""

    def __init__(self, message: str, path, moved: Path | None = None, names: tuple[str, ...] = ()):
        super().__init__(message)
        self.path, self.moved, self.names = Path(path), moved, tuple(names)


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


def _writable(folder: Path) -> bool:
    """Whether we may write in `folder`: allowed, and its mode lets its owner write (a shared data folder made
    read-only is left alone even by root, whom os.access lets write anywhere)."""
    try:
        return os.access(folder, os.W_OK) and bool(folder.stat().st_mode & stat.S_IWUSR)
    except OSError:
        return False


def quarantine(path: str | Path) -> Path | None:
    """Move a file that failed its checksum to `<name>.corrupt` beside it (replacing an older one): it no longer
    counts as present, so the next fetch downloads it afresh, and its bytes stay there for a look. None where
    it cannot be moved (a read-only folder)."""
    path = Path(path)
    moved = path.with_name(path.name + ".corrupt")
    if not _writable(path.parent):
        return None
    try:
        os.replace(path, moved)
    except OSError:
        return None
    return moved


def corrupt(path: str | Path, what: str, names=()) -> ChecksumMismatch:
    """Move `path` aside (`quarantine`) and return the error that says so: 'checksum mismatch for <path>: <what>.
    ...', with the command that fetches it again (`make data NAMES=...` given its catalog `names`)."""
    names = (names,) if isinstance(names, str) else tuple(names)
    moved = quarantine(path)
    again = f"`{fetch_command(names)}` downloads it afresh" if names else "download it again"
    where = (f"moved it to {moved}, so it no longer counts as present: {again}" if moved else
             f"could not move it aside ({Path(path).parent} is read-only): delete or replace it, then {again}")
    return ChecksumMismatch(f"checksum mismatch for {path}: {what}. The file is corrupt or was changed; {where}",
                            path, moved, names)


def check_sha256(path: str | Path, expected: str, names=(), algorithm: str = "sha256", source: str = "") -> None:
    """Raise ChecksumMismatch if the file's SHA-256 (or `algorithm`'s digest) is not `expected`, after moving
    the file aside (`corrupt`). `names`: its catalog names, for the command; `source`: where `expected` is from."""
    actual = digest(path, algorithm)
    if actual != expected.strip().lower():
        raise corrupt(path, f"expected {_SHOWN[algorithm]} {expected}{f' ({source})' if source else ''}, got {actual}",
                      names)


def set_aside(path: str | Path, expected, algorithm: str = "sha256", names=()) -> None:
    """Before fetching `path` afresh: if it is there but its digest is not `expected` (a string, or several that
    must all match), move it aside with a warning naming it, both checksums and where it went."""
    for value in [expected] if isinstance(expected, str) else expected:
        if not Path(path).is_file():
            return
        try:
            check_sha256(path, value, names, algorithm)
        except ChecksumMismatch as e:
            warnings.warn(f"{e} (fetching it afresh now)", stacklevel=2)


def cached_digest(path: str | Path, algorithm: str = "sha256") -> str:
    """`digest(path)`, remembered by the file's size and mtime in `<folder>/.verified.json` (and in memory), so a
    presence check hashes an unchanged file once rather than on every `make data`, status or notebook run (GBs
    of archives, many UEA sets). A file changed since has a new mtime and is hashed again; one changed in the
    last 2 s is not remembered (a later change could keep its mtime). Only presence checks rely on this
    memory: loaders hash in full before they parse (`check_sha256`)."""
    path = Path(path)
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, algorithm)
    if key in _DIGESTS:
        return _DIGESTS[key]
    book = _read_verified(path.parent)
    entry = book.get(path.name, {})
    same = (entry.get("size"), entry.get("mtime_ns")) == (st.st_size, st.st_mtime_ns)
    if same and algorithm in entry:
        return _DIGESTS.setdefault(key, entry[algorithm])
    value = digest(path, algorithm)
    if time.time_ns() - st.st_mtime_ns < SETTLED_NS:
        return value
    _DIGESTS[key] = value
    if _writable(path.parent):
        book[path.name] = {**(entry if same else {"size": st.st_size, "mtime_ns": st.st_mtime_ns}), algorithm: value}
        try:  # never half-written; whoever writes last wins
            write_atomic(path.parent / VERIFIED, json.dumps(book, indent=1, sort_keys=True) + "\n")
        except OSError:
            pass
    return value


def _read_verified(folder: Path) -> dict:
    try:
        book = json.loads((folder / VERIFIED).read_text())
    except (OSError, ValueError):
        return {}
    return book if isinstance(book, dict) else {}


def intact(path: str | Path, expected: str | None = None, algorithm: str = "sha256") -> bool:
    """Whether `path` is a file whose digest is `expected` (any file when None): what presence checks count as
    here. A file that fails is not here, so `make data` fetches it afresh (moving the bad one aside, `set_aside`).
    Digests come from `cached_digest`: a stat for a file already checked, a full hash once after a change."""
    path = Path(path)
    return path.is_file() and (expected is None or cached_digest(path, algorithm) == expected.strip().lower())


def quarantined(folder: str | Path, pattern: str) -> list[Path]:
    """The files matching `pattern` under `folder` that were moved aside (`quarantine`) with no good copy back."""
    return sorted(p.with_suffix("") for p in Path(folder).glob(pattern + ".corrupt") if not p.with_suffix("").exists())


def check_quarantined(folder: str | Path, pattern: str, names=()) -> None:
    """Raise ChecksumMismatch if a file matching `pattern` under `folder` is `quarantined`: loaders that find their
    files by globbing call it, so a file that failed its checksum stops them rather than silently leaving it out."""
    names = (names,) if isinstance(names, str) else tuple(names)
    if gone := quarantined(folder, pattern):
        again = f"`{fetch_command(names)}` fetches them again" if names else "put good copies back"
        raise ChecksumMismatch(f"{len(gone)} file(s) under {folder} failed their checksum and were moved aside, e.g. "
                               f"{gone[0]} (now {gone[0].name}.corrupt): {again}, or delete the .corrupt files to go "
                               f"on without them", gone[0], Path(f"{gone[0]}.corrupt"), names)


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
    return write_atomic(sums_file, "".join(f"{digest}  {name}\n" for name, digest in sorted(sums.items())))


def verify_folder(folder: str | Path, names: list[str] | None = None, catalog_names=()) -> list[Path]:
    """Check files against `folder/SHA256SUMS`, if that file exists; return the files verified.

    `names` (relative to `folder`, as in SHA256SUMS) restricts the check to those files; names not
    listed in SHA256SUMS are skipped. A listed file that is absent is a FileNotFoundError; a differing one
    is moved aside and a ChecksumMismatch names it (and `catalog_names`' fetch command).
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
        check_sha256(path, sums[name], catalog_names, source=f"listed in {sums_path}")
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
    `download_url`), `unpack(archive)`, then delete it. One left by an earlier try is checked against `sha256` /
    `md5` first, and moved aside if it differs (`set_aside`). An archive that does not unpack (a bad zip or tar,
    a member missing or, for `unpack`, not the known file: `unpack` raises ValueError) is removed with a
    ValueError naming it, so the next try downloads it afresh. `record`: its SHA-256 is then added to SHA256SUMS
    (trust on first use, for archives whose publisher gives no checksum)."""
    import tarfile
    import zipfile

    archive = Path(archive)
    for algorithm, expected in (("sha256", sha256), ("md5", md5)):
        if expected is not None:
            set_aside(archive, expected, algorithm)
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
    """{name: sha256} from a publisher's SHA256SUMS list at `url` (e.g. PhysioNet's SHA256SUMS.txt). Under a
    mirror that does not serve the list, the publisher's own is read: the known checksum is checked whatever
    the mirror provides. Empty if neither can be read (the caller then records the checksum on first use)."""
    for source in dict.fromkeys((mirrored(url), url)):
        try:
            with urllib.request.urlopen(urllib.request.Request(source, headers={"User-Agent": "romae"}),
                                        timeout=TIMEOUT) as resp:
                text = resp.read().decode("utf-8", errors="replace")
        except (OSError, ValueError):
            continue
        sums = {}
        for line in text.splitlines():
            parts = line.strip().split(maxsplit=1)
            if len(parts) == 2 and len(parts[0]) == 64:
                sums[parts[1].lstrip("*").strip()] = parts[0].lower()
        if sums:
            return sums
    return {}
