"""UEA/UCR time-series archive: a reader for the `.ts` format and a loader for `<root>/uea/<name>/`.

The paper's irregular-classification experiments (Table 6) use five multivariate UEA data sets,
`TABLE6`. Each is a pair of files `<root>/uea/<name>/<name>_TRAIN.ts` and `<name>_TEST.ts`, where
`<root>` is `root=` or $ROMAE_DATA (`files.data_root`).

The `.ts` format (sktime/aeon): `#` lines are comments (and, in the header, `%` lines, as some files have); header lines start with `@` (tags are
case-insensitive) - `@problemName`, `@timeStamps`, `@missing`, `@univariate`, `@dimensions`,
`@equalLength`, `@seriesLength`, `@classLabel true A B C` / `@classLabel false`, `@targetLabel` - and
`@data` ends the header. Each later line is one case: dimensions separated by `:`, values within a
dimension by `,`, `?` (or NaN) a missing value, and the class label (or regression target) as the last
`:` field. With `@timeStamps true` a dimension is a list of `(time,value)` pairs. Decisions of ours:

* A case is returned time-major, float64 `[T, C]` (the file is channel-major). Within a case, shorter
  dimensions are padded at the end with NaN; with time stamps, dimensions are aligned on the sorted
  union of their (numeric only) time stamps, NaN where a dimension was not observed.
* Header claims are checked (number of dimensions, declared class labels, @equalLength/@seriesLength, and
  within a case: under @equalLength true every dimension of equal length, under @missing false no `?` or NaN);
  unknown `@` tags are ignored. Time stamps must be finite and within float32's range (|t| <= 3.4e38); values
  may be infinite here (the builders refuse them, naming the sample). Every error is a ValueError
  "<file> line <n>: <what was wrong>".
* The file is read as a stream, a line at a time (lines numbered as `str.splitlines` numbers them), so memory
  follows what is parsed, not the file's size, and a file fails at its first bad line: before @data a line is
  judged from its first 4 KB (a binary file fails at its first line, however long) and may not exceed 1 MiB.
* `load` refuses a test file whose number of channels, or kind (classification / regression), differs from
  its train file's.

Checksums: the archive publishes none. Before parsing, `load` checks each file against its constant in
`KNOWN_SHA256` where there is one (it always wins), else against any `SHA256SUMS` in `<root>/uea/` (keys
`<name>/<name>_TRAIN.ts`) or in `<root>/uea/<name>/` (keys `<name>_TRAIN.ts`). A download's files are checked
against `KNOWN_SHA256` before they are unpacked into place (a zip that differs is refused, nothing written);
then we write `<root>/uea/<name>/SHA256SUMS` for the two files (trust on first use), so later loads detect
any change. A file that fails is moved aside (`<file>.corrupt`, `files.quarantine`) with an error naming it and
`make data NAMES=uea:<name>`; `present` does not count it, so `make data` fetches it afresh.

    from romae.data import uea
    d = uea.load("BasicMotions")                  # or root="/path/to/data", download=True
    x, y = d["train"].series[0], d["train"].labels[0]   # x: [100, 6] float64, y: "Standing"
"""

from __future__ import annotations

import os
import re
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np

from . import files

URL = "http://www.timeseriesclassification.com/aeon-toolkit/{name}.zip"
TABLE6 = ("BasicMotions", "CharacterTrajectories", "Epilepsy", "Heartbeat", "LSST")
KNOWN_SHA256 = {  # keys relative to <root>/uea/
    "BasicMotions/BasicMotions_TEST.ts": "79213102bc6fca1a398ad98ce1185dff0208fa3d1465e687f48288946b0ff8dc",
    "BasicMotions/BasicMotions_TRAIN.ts": "8dc43cc6306cb679c888c01e26f91772ac4441a916da43bac8b79734a538b9d6",
}

_BOOL_TAGS = {"timestamps", "missing", "univariate", "equallength", "targetlabel"}
_INT_TAGS = {"dimensions", "serieslength"}
_PAIR = re.compile(r"\(([^()]*)\)")  # one "(time,value)" pair
_PAIRS = re.compile(r"\s*\([^(),]*,[^(),]*\)(?:\s*,\s*\([^(),]*,[^(),]*\))*\s*")  # a whole dimension
_COLON_OUTSIDE_PARENS = re.compile(r":(?![^()]*\))")  # so "(2020-01-01 10:00:00,1)" is not split
_HEAD_PEEK = 4096  # characters of a line before @data read before judging whether it can be a header line
_HEAD_MAX = 1 << 20  # the longest line (header or comment) accepted before @data, in characters
_BREAKS = ("\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")  # str.splitlines' breaks
_FLOAT32_MAX = float(np.finfo(np.float32).max)  # 3.4028235e38: larger time stamps have no float32 value


@dataclass
class TSData:
    """The cases of one `.ts` file."""

    series: list[np.ndarray]  # float64 [T_i, C] each, NaN = missing
    times: list[np.ndarray] | None  # float64 [T_i] each, only with @timeStamps true
    labels: np.ndarray | None  # str (classification) or float64 (regression), one per case
    class_names: list[str] | None  # the order of @classLabel true ...
    problem_name: str | None
    equal_length: bool  # all cases have the same T_i
    n_channels: int

    def __len__(self) -> int:
        return len(self.series)


def _numbers(text: str, what: str, fail) -> np.ndarray:
    """float64 array of the comma-separated numbers in `text` ('?' = NaN); else name the bad one."""
    try:  # one vectorised conversion; numpy accepts 'nan', 'NaN', 'inf' and surrounding spaces
        return np.array(text.replace("?", "nan").split(","), dtype=np.float64)
    except ValueError:
        tokens = text.split(",")
        bad = next((t for t in tokens if t.strip() != "?" and not _is_float(t)), None)
        if bad is None:  # numpy refused what Python's float() takes (e.g. "1_000"): go slowly
            return np.array([float(t) if t.strip() != "?" else np.nan for t in tokens])
        raise fail(f"{what} {bad!r} is not a number") from None


def _timed(text: str, dim: int, fail) -> tuple[np.ndarray, np.ndarray]:
    """Parse "(t,v),(t,v),..." into (times, values), sorted by time."""
    if not _PAIRS.fullmatch(text):  # find what is wrong, for the message
        pairs = _PAIR.findall(text)
        bad = next((p for p in pairs if p.count(",") != 1), None)
        if bad is not None and not _PAIR.sub("", text).strip(" ,\t"):
            raise fail(f"dimension {dim}: pair ({bad}) is not (timestamp,value)")
        raise fail(f"dimension {dim}: expected (timestamp,value) pairs separated by commas, "
                   f"got {text[:60]!r}")
    flat = text.replace("(", "").replace(")", "").split(",")  # t1, v1, t2, v2, ...
    t_tok, v_tok = flat[0::2], flat[1::2]
    try:
        t = np.array(t_tok, dtype=np.float64)
    except ValueError:
        bad = next((s for s in t_tok if not _is_float(s)), t_tok[0])
        raise fail(f"dimension {dim}: timestamp {bad!r} is not a number "
                   f"(only numeric time stamps are supported)") from None
    out = ~np.isfinite(t) | (np.abs(t) > _FLOAT32_MAX)
    if out.any():  # the first in the file's order, as written
        i = int(np.argmax(out))
        if not np.isfinite(t[i]):
            raise fail(f"dimension {dim}: timestamp {t_tok[i].strip()!r} is not finite")
        raise fail(f"dimension {dim}: timestamp {t_tok[i].strip()!r} is beyond float32's range "
                   f"(magnitude above {_FLOAT32_MAX:.8g})")
    v = _numbers(",".join(v_tok), f"dimension {dim}: value", fail)
    order = np.argsort(t, kind="stable")
    t, v = t[order], v[order]
    if np.any(t[1:] == t[:-1]):
        raise fail(f"dimension {dim}: timestamp {t[1:][t[1:] == t[:-1]][0]:g} appears twice")
    return t, v


def _is_float(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def _parse_bool(value: str, tag: str, fail) -> bool:
    if value.lower() not in ("true", "false"):
        raise fail(f"@{tag} must be true or false, got {value!r}")
    return value.lower() == "true"


class _Lines:
    """The lines of an open text file, read one physical line at a time and numbered as `str.splitlines` numbers
    them (it also breaks at \\v, \\f, \\x1c-\\x1e, \\x85, \\u2028, \\u2029): `lineno` is the number of the line
    last yielded. Iterate once (`iter`), and set `header` false when @data is read.

    While `header` is true a line is read at most _HEAD_PEEK characters at a time: one whose first characters
    cannot begin a header, comment or blank line is refused from them (so a binary file fails at its first line,
    however long), and one longer than _HEAD_MAX is refused. After @data a line is read whole (a case: its text is
    proportional to what it parses into)."""

    def __init__(self, f, name: str):
        self.f, self.name, self.lineno, self.header = f, name, 0, True

    def fail(self, msg: str) -> ValueError:
        return ValueError(f"{self.name} line {self.lineno}: {msg}")

    def __iter__(self):
        carry = ""  # before @data: the start of a line whose end is not read yet
        while True:
            if not self.header and not carry:  # a case: the whole physical line
                chunk = self.f.readline()
                if not chunk:
                    return
                for line in chunk.splitlines():
                    self.lineno += 1
                    yield line
                continue
            size = (_HEAD_MAX if carry else _HEAD_PEEK) if self.header else -1
            chunk = self.f.readline(size)
            text, carry = carry + chunk, ""
            if not text:
                return
            pieces = text.splitlines(keepends=True)
            if 0 < size == len(chunk) and not pieces[-1].endswith(_BREAKS):  # the last line goes on
                carry = pieces.pop()
            for piece in pieces:
                self.lineno += 1
                yield piece.splitlines()[0]
            if carry and self.header:
                start = carry.lstrip()
                if start and not start.startswith(("@", "#", "%")):
                    self.lineno += 1
                    raise self.fail(f"expected a header line (@...) or @data, got {start[:60]!r}")
                if len(carry) > _HEAD_MAX:
                    self.lineno += 1
                    raise self.fail(f"a line before @data longer than {_HEAD_MAX} characters")


def _check_case(lengths: list[int], equal_length: bool, values: list[np.ndarray] | None,
                times: list[np.ndarray] | None, fail) -> None:
    """Refuse a case that contradicts the header: under @equalLength true, a dimension whose length (`lengths`,
    one per dimension) differs from the first's; under @missing false (pass the dimensions' `values`, and their
    `times` if any, where the case may hold a missing value), a '?' or NaN."""
    if equal_length:
        for d, n in enumerate(lengths[1:], 2):
            if n != lengths[0]:
                raise fail(f"dimension {d} has {n} values but dimension 1 has {lengths[0]}, under @equalLength true")
    for d, v in enumerate(values or (), 1):
        gap = np.isnan(v)
        if gap.any():
            k = int(np.argmax(gap))
            where = f"at time {times[d - 1][k]:g}" if times is not None else f"value {k + 1}"
            raise fail(f"dimension {d}: missing value ('?' or NaN, {where}) under @missing false")


def _case(fields: list[str], fail) -> tuple[list[int], np.ndarray, np.ndarray, bool]:
    """A case's dimensions (its `:` fields, label removed) parsed: (each dimension's length, all values in one
    array, dimension after dimension, the case as float64 [T, C] with shorter dimensions padded at the end with
    NaN, whether a value is missing). One numpy conversion for the whole case, of the same tokens as `_numbers`
    per dimension (so the same numbers); where it fails, `_numbers` per dimension names the bad value."""
    text = (fields[0] if len(fields) == 1 else ",".join(fields)).replace("?", "nan")
    try:
        flat = np.array(text.split(","), dtype=np.float64)
        lengths = [field.count(",") + 1 for field in fields]
    except ValueError:
        dims = [_numbers(field, f"dimension {d + 1}: value", fail) for d, field in enumerate(fields)]
        flat, lengths = np.concatenate(dims), [len(v) for v in dims]
    # only a token with an 'n' ("nan", "NaN", "?" -> "nan") reads as NaN: look at the numbers only then
    holes = ("n" in text or "N" in text) and bool(np.isnan(flat).any())
    if lengths.count(lengths[0]) == len(lengths):
        x = flat.reshape(len(lengths), lengths[0]).T.copy()  # C-ordered [T, C], as np.stack(dims, axis=1)
    else:
        x = np.full((max(lengths), len(lengths)), np.nan)
        for c, v in enumerate(np.split(flat, np.cumsum(lengths[:-1]))):
            x[: len(v), c] = v
    return lengths, flat, x, holes


def read_ts(path: str | Path) -> TSData:
    """Read one `.ts` file (format: module docstring), as a stream: a line at a time, failing at the first line
    that is malformed or contradicts the header."""
    path = Path(path)
    with open(path, encoding="utf-8", errors="replace") as f:
        return _read_ts_lines(_Lines(f, path.name), path.name)


def _read_ts_lines(lines: _Lines, filename: str) -> TSData:
    """`read_ts` on the lines of an open file."""
    fail, it = lines.fail, iter(lines)

    # ---- header
    head: dict[str, object] = {}
    class_names: list[str] | None = None
    for raw in it:
        line = raw.strip()
        if not line or line.startswith(("#", "%")):  # '%': ARFF-style comments, found in some archive files
            continue
        if not line.startswith("@"):
            raise fail(f"expected a header line (@...) or @data, got {line[:60]!r}")
        if not line[1:].split():
            raise fail("'@' without a tag name")
        name, *rest = line[1:].split()  # `name` as written, for messages
        tag = name.lower()
        if tag == "data":
            lines.header = False
            break
        if tag == "problemname":
            head[tag] = " ".join(rest)
            continue
        if tag not in _BOOL_TAGS | _INT_TAGS | {"classlabel"}:
            continue  # unknown tags are tolerated
        if not rest:
            raise fail(f"@{name} needs a value")
        if tag in _INT_TAGS:
            if not rest[0].isdigit():
                raise fail(f"@{name} must be a whole number, got {rest[0]!r}")
            head[tag] = int(rest[0])
        else:
            head[tag] = _parse_bool(rest[0], name, fail)
            if tag == "classlabel" and head[tag]:
                class_names = rest[1:]
                if not class_names:
                    raise fail("@classLabel true must be followed by the class names")
    else:
        raise ValueError(f"{filename}: no @data line")
    timestamps = bool(head.get("timestamps", False))
    is_class, is_target = bool(head.get("classlabel", False)), bool(head.get("targetlabel", False))
    if is_class and is_target:
        raise fail("both @classLabel true and @targetLabel true")
    expected = head.get("dimensions", 1 if head.get("univariate") else None)
    if head.get("univariate") and expected != 1:
        raise fail(f"@univariate true but @dimensions {expected}")
    known = set(class_names or ())
    equal_length, missing = bool(head.get("equallength")), bool(head.get("missing", True))

    # ---- cases
    series, times, labels = [], [] if timestamps else None, []
    for raw in it:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = _COLON_OUTSIDE_PARENS.split(line) if timestamps else line.split(":")
        if is_class or is_target:
            label = fields.pop().strip()
            if is_class and label not in known:
                raise fail(f"class label {label!r} is not declared in @classLabel "
                           f"({', '.join(class_names)})")
            if is_target and not _is_float(label):
                raise fail(f"target {label!r} is not a number")
            labels.append(label)
        if expected is None:
            expected = len(fields)  # no @dimensions: the first case decides
        if len(fields) != expected:
            raise fail(f"case has {len(fields)} dimensions, expected {expected}")

        if timestamps:
            parsed = [_timed(text, d + 1, fail) for d, text in enumerate(fields)]
            _check_case([len(p[0]) for p in parsed], equal_length, None if missing else [p[1] for p in parsed],
                        [p[0] for p in parsed], fail)
            t = np.unique(np.concatenate([p[0] for p in parsed]))  # sorted union of the time stamps
            x = np.full((len(t), expected), np.nan)
            for c, (tc, vc) in enumerate(parsed):
                x[np.searchsorted(t, tc), c] = vc
            times.append(t)
        else:
            lengths, flat, x, holes = _case(fields, fail)
            gaps = holes and not missing
            _check_case(lengths, equal_length, np.split(flat, np.cumsum(lengths[:-1])) if gaps else None, None, fail)
        # header claims about lengths
        if head.get("equallength"):
            want = head.get("serieslength", len(series[0]) if series else len(x))
            if len(x) != want:
                raise fail(f"series length {len(x)}, but @equalLength true with length {want}")
        series.append(x)

    if not series:  # (`lines.lineno` is now the number of lines)
        raise fail("no cases after @data")
    lengths = {len(x) for x in series}
    if is_class:
        labels = np.array(labels, dtype=str)
    elif is_target:
        labels = np.array(labels, dtype=np.float64)
    return TSData(series=series, times=times, labels=labels if (is_class or is_target) else None,
                  class_names=class_names, problem_name=head.get("problemname"),
                  equal_length=len(lengths) == 1, n_channels=int(expected))


# ---------------------------------------------------------------------------------------- loading

def _check_name(name: str) -> None:
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or name.startswith("."):
        raise ValueError(f"bad UEA data set name {name!r}")


def _split_files(name: str) -> list[str]:
    return [f"{name}_TRAIN.ts", f"{name}_TEST.ts"]


def _find_member(zf: zipfile.ZipFile, base: str) -> str:
    """The zip member whose file name is `base`: case-sensitively first, then case-insensitively."""
    members = sorted((n for n in zf.namelist() if not n.endswith("/")), key=lambda n: (n.count("/"), n))
    for same in (lambda a, b: a == b, lambda a, b: a.lower() == b.lower()):
        found = [n for n in members if same(PurePosixPath(n).name, base)]
        if found:
            return found[0]
    raise ValueError(f"{zf.filename} holds no {base}; members: {', '.join(members[:20])}")


def _download(name: str, uea: Path, progress: bool = True) -> list[Path]:
    """Fetch <name>.zip, unpack the two .ts files into <uea>/<name>/, write SHA256SUMS, drop the zip.

    A zip left by an interrupted run is reused (a partial download resumes); one that is not a zip or
    lacks the files is removed with an error, so the next call downloads it afresh."""
    folder = uea / name

    def unpack(zip_path: Path) -> None:  # both files checked against KNOWN_SHA256 before either is put in place
        folder.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(zip_path) as zf:
            members = {base: _find_member(zf, base) for base in _split_files(name)}
            parts = {base: folder / f".{base}.part" for base in members}
            try:
                for base, member in members.items():
                    with zf.open(member) as src, open(parts[base], "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    known = KNOWN_SHA256.get(f"{name}/{base}")
                    if known and (got := files.sha256(parts[base])) != known:
                        raise ValueError(f"its {base} has SHA-256 {got}, not the known {known}")
                for base, part in parts.items():
                    os.replace(part, folder / base)  # atomic, as in files.download_url
            finally:
                for part in parts.values():
                    part.unlink(missing_ok=True)

    files.fetch_archive(URL.format(name=name), uea / f"{name}.zip", unpack, what=f"zip of {name}", record=False,
                        progress=progress)
    files.add_sums(folder, _split_files(name))  # the archive publishes no checksums: trust on first use
    return [folder / b for b in _split_files(name)]


def _expected(name: str, uea: Path) -> dict[str, list[str]]:
    """{file: the SHA-256s it must match}: its KNOWN_SHA256 alone where there is one (a known checksum wins over
    a recorded one), else the lines of <uea>/SHA256SUMS and <uea>/<name>/SHA256SUMS that list it (none: unchecked)."""
    sums = [(files.read_sums(f), prefix) for f, prefix in ((uea / "SHA256SUMS", f"{name}/"),
                                                            (uea / name / "SHA256SUMS", "")) if f.is_file()]
    return {b: [KNOWN_SHA256[f"{name}/{b}"]] if f"{name}/{b}" in KNOWN_SHA256 else
            [listed[prefix + b] for listed, prefix in sums if prefix + b in listed] for b in _split_files(name)}


def _intact(name: str, uea: Path) -> bool:
    """Whether both files are in <uea>/<name>/ and match `_expected` (`files.intact`: hashed once, then
    remembered by size and mtime, so a check of many sets costs a stat per file)."""
    return all(files.intact(uea / name / b, d)
               for b, digests in _expected(name, uea).items() for d in digests or [None])


def present(name: str, root: str | Path | None = None) -> bool:
    """Whether both .ts files of `name` are under <root>/uea/<name>/ and match their known or recorded checksums;
    a file that does not is not counted, so `make data` fetches it afresh."""
    _check_name(name)
    return _intact(name, files.data_root(root) / "uea")


def download(name: str, root: str | Path | None = None, progress: bool = True) -> list[Path]:
    """Fetch data set `name` into <root>/uea/<name>/ unless it is there (a file that fails its checksum is moved
    aside with a warning and fetched afresh); verify; return its two files."""
    _check_name(name)
    uea = files.data_root(root) / "uea"
    if not present(name, root):
        _refetch(name, uea, progress)
    _verify(name, uea)
    return [uea / name / b for b in _split_files(name)]


def _refetch(name: str, uea: Path, progress: bool = True) -> None:
    """Move aside (with a warning) what is there but fails its checksum, then download the set."""
    for b, digests in _expected(name, uea).items():
        files.set_aside(uea / name / b, digests, names=f"uea:{name}")
    _download(name, uea, progress)


def _verify(name: str, uea: Path) -> None:
    """Check the two files against `_expected`: a file that differs is moved aside and a ChecksumMismatch names
    it, both checksums and `make data NAMES=uea:<name>`."""
    for b, digests in _expected(name, uea).items():
        for d in digests:
            files.check_sha256(uea / name / b, d, f"uea:{name}")


def _locate(name: str, root) -> tuple[str, Path]:
    """(data set name, the folder that holds <name>/) for `load`.

    `name` is a data set name looked up under `root` (or $ROMAE_DATA, or <repo>/data), where `root` may be
    a data root holding uea/<name>/, the uea/ folder itself, or <name>'s own folder; or `name` is a path
    to a data set's folder (any folder holding <Name>_TRAIN.ts and <Name>_TEST.ts)."""
    path = Path(name).expanduser()
    has_files = lambda folder: all((folder / b).is_file() for b in _split_files(folder.name))  # noqa: E731
    if root is None and ("/" in name or os.sep in name or (path.is_dir() and has_files(path))):
        if not path.is_dir():
            raise files.DataMissing(f"no UEA data set folder at {path} (a folder <Name>/ holding <Name>_TRAIN.ts "
                                    f"and <Name>_TEST.ts)")
        _check_name(path.resolve().name)
        return path.resolve().name, path.resolve().parent
    _check_name(name)
    base = files.data_root(root)
    candidates = [base / "uea", base] + ([base.parent] if base.name == name else [])
    for uea in candidates:
        if has_files(uea / name):
            return name, uea
    return name, base / "uea"  # where it belongs (and where download=True puts it)


def load(name: str, root: str | Path | None = None, download: bool = False) -> dict:
    """Load UEA data set `name` -> {"name", "train", "test", "classes"}.

    Where: `root` (or $ROMAE_DATA, or <repo>/data) is a data root holding uea/<name>/, or the uea/ folder
    itself, or <name>'s own folder; `name` may also be a path to the data set's folder (any folder with
    <Name>_TRAIN.ts and <Name>_TEST.ts). `classes` is the train file's @classLabel order ([] for
    regression). With `download=True`, missing files, and files that fail their checksum, are fetched from
    the archive (see the module docstring for the checksum policy).
    """
    name, uea = _locate(str(name), root)
    paths = {split: uea / name / base for split, base in zip(("train", "test"), _split_files(name))}
    missing = [p for p in paths.values() if not p.is_file()]
    if download and (missing or not _intact(name, uea)):
        _refetch(name, uea)
    elif missing:
        raise files.missing_file_error(missing[0], URL.format(name=name),
                                       "pass download=True (needs internet)", names=f"uea:{name}")
    _verify(name, uea)
    train, test = read_ts(paths["train"]), read_ts(paths["test"])
    _check_splits(paths["train"], train, paths["test"], test)
    classes = list(train.class_names or [])
    if classes and test.labels is not None:
        unknown = sorted(set(test.labels.tolist()) - set(classes))
        if unknown:
            raise ValueError(f"{paths['test']}: labels {unknown} are not classes of the train file")
    return {"name": name, "train": train, "test": test, "classes": classes, "folder": str(uea / name)}


def _check_splits(train_path: Path, train: TSData, test_path: Path, test: TSData) -> None:
    """Refuse a test file that does not fit its train file: another number of channels, or a regression file
    (@targetLabel true) paired with a classification one (@classLabel true); an unlabelled file fits either."""
    if test.n_channels != train.n_channels:
        raise ValueError(f"{test_path} has {test.n_channels} channels but the train file {train_path} has "
                         f"{train.n_channels}: the two files of a data set must have the same channels")
    kind = {path: None if d.labels is None else "classification (@classLabel true)" if d.class_names is not None
            else "regression (@targetLabel true)" for path, d in ((train_path, train), (test_path, test))}
    if None not in kind.values() and kind[train_path] != kind[test_path]:
        raise ValueError(f"{train_path} is {kind[train_path]} but {test_path} is {kind[test_path]}")


def checksum_state(name: str, root: str | Path | None = None) -> str:
    """How the two .ts files of `name` under <root>/uea/<name>/ are checked (`_expected`): "known" (a
    `KNOWN_SHA256` constant for each), "recorded" (each listed in a SHA256SUMS, trust on first use, or known),
    "partly recorded" (one of the two), or "none" (no checksum known: any bytes count as the data set)."""
    _check_name(name)
    expected = _expected(name, files.data_root(root) / "uea")
    if all(f"{name}/{b}" in KNOWN_SHA256 for b in expected):
        return "known"
    listed = [bool(d) for d in expected.values()]
    return "recorded" if all(listed) else "partly recorded" if any(listed) else "none"


def available(root: str | Path | None = None) -> list[str]:
    """Names of the data sets under <root>/uea/ that have both .ts files (sorted)."""
    uea = files.data_root(root) / "uea"
    if not uea.is_dir():
        return []
    return sorted(d.name for d in uea.iterdir()
                  if d.is_dir() and all((d / b).is_file() for b in _split_files(d.name)))


def generate(name: str, n_train: int, n_test: int, channels: int, classes: int, lengths: tuple[int, int],
             seed: int = 0) -> dict:
    """Random series of a data set's shape, in `load`'s form ({"name", "train", "test", "classes"}, "folder"
    None, "generated" True): a dry run's stand-in where the files are absent (`romae.runtime`), not data.

    Class k is a noisy sine of k + 1 cycles per series with a random phase per channel; labels cycle through
    the classes; lengths are uniform in `lengths` (min, max), the first series of a split at the max and the
    second at the min, so the padded length is the data set's."""
    if min(n_train, n_test, channels, classes) < 1 or not 1 <= lengths[0] <= lengths[1]:
        raise ValueError(f"{name}: sizes must be >= 1 and lengths (min, max) ordered, got n_train={n_train}, "
                         f"n_test={n_test}, channels={channels}, classes={classes}, lengths={lengths}")
    rng = np.random.default_rng(seed)
    names = [f"class{k}" for k in range(classes)]

    def split(n: int) -> TSData:
        labels, series = np.arange(n) % classes, []
        for i, k in enumerate(labels):
            steps = (lengths[1], lengths[0])[i] if i < 2 else int(rng.integers(lengths[0], lengths[1] + 1))
            t = np.linspace(0.0, 1.0, steps)[:, None]
            series.append(np.sin(2 * np.pi * (k + 1) * t + rng.uniform(0, 2 * np.pi, channels))
                          + 0.3 * rng.standard_normal((steps, channels)))
        return TSData(series=series, times=None, labels=np.array(names)[labels], class_names=names, problem_name=name,
                      equal_length=lengths[0] == lengths[1], n_channels=channels)

    return {"name": name, "train": split(n_train), "test": split(n_test), "classes": names, "folder": None,
            "generated": True}
