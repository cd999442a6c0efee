"""PhysioNet/CinC Challenge 2012: the 8,000 ICU records of set-a and set-b, as mTAN and HeTVAE use them.

The raw record archives are read directly (no intermediate `.npz`): each record is a CSV
`Time,Parameter,Value` with `HH:MM` times since ICU admission. `records()` returns one long table with
one row per (record, quantised time, variable) and the mean of the repeated observations in that cell,
which is mTAN's preprocessing (`reml-lab/mTAN`, `src/physionet.py`), described in the data folder's
MANIFEST and re-implemented here:

1. time in hours = HH + MM/60, rounded to a multiple of `quantization` (mTAN's interpolation runs use
   0.016 h; Python's and numpy's rounding both round half to even, so the grid is the same);
2. repeated observations of one variable at one quantised time are averaged; `RecordID` is skipped;
   descriptor values of -1 (unknown height, ...) are kept as observations, as mTAN does;
3. the 41 variables in mTAN's order (`VARIABLES`).

`split()` is the 80/20 `train_test_split(train_size=0.8, random_state=42, shuffle=True)` of mTAN and
HeTVAE, applied to the record ids **sorted** (mTAN lists files with `os.listdir`, whose order depends on
the file system, so its exact split cannot be reproduced anywhere; ours is the same on every machine).
`Scaling` gives the two normalisations in use (mTAN's min-max and HeTVAE's trimmed z-score), each fitted
on the training split only.

Files: `<root>/physionet2012/{set-a.tar.gz, set-b.tar.gz}` (root = `$ROMAE_DATA`), verified against
`KNOWN_SHA256` (the shared data folder's byte-reproducible copies, see its MANIFEST) or the folder's
`SHA256SUMS`. `download=True` fetches missing files from PhysioNet
(https://physionet.org/content/challenge-2012/1.0.0/), checked against PhysioNet's own SHA256SUMS.txt
(read from PhysioNet when a mirror lacks it; recorded on first use only if neither can be read); its
archives are packed differently from the shared copies (same records), so either checksum is accepted: a
downloaded file's SHA-256 is written to SHA256SUMS and every later load checks it. A file that matches
neither is moved aside (`<file>.corrupt`) with an error naming it and `make data NAMES=physionet2012`, and
`present` does not count it, so `make data` fetches it afresh. Parsing all 8,000 records takes ~10 s; the
result is cached on disk (`romae.storage.memo`) keyed by the files' checksums and the parameters.
"""

from __future__ import annotations

import tarfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from . import files

URL = "https://physionet.org/files/challenge-2012/1.0.0/{name}"  # mTAN appends ?download for the tarballs
HOME = "https://physionet.org/content/challenge-2012/1.0.0/"
SUMS_URL = "https://physionet.org/files/challenge-2012/1.0.0/SHA256SUMS.txt"  # PhysioNet's own checksum list
SETS = ("a", "b")  # the interpolation benchmark's sets (mTAN, HeTVAE, RoMAE)
KNOWN_SETS = ("a", "b", "c")  # set-c (the challenge's hidden test set) is readable too, checked by SHA256SUMS
QUANTIZATION = 0.016  # hours; mTAN's --quantization for interpolation (its default is 0.1)

# mTAN's / HeTVAE's column order (src/physionet.py, `params`)
VARIABLES = ("Age", "Gender", "Height", "ICUType", "Weight", "Albumin", "ALP", "ALT", "AST", "Bilirubin",
             "BUN", "Cholesterol", "Creatinine", "DiasABP", "FiO2", "GCS", "Glucose", "HCO3", "HCT", "HR", "K",
             "Lactate", "Mg", "MAP", "MechVent", "Na", "NIDiasABP", "NIMAP", "NISysABP", "PaCO2", "PaO2", "pH",
             "Platelets", "RespRate", "SaO2", "SysABP", "Temp", "TroponinI", "TroponinT", "Urine", "WBC")
DESCRIPTORS = ("Age", "Gender", "Height", "ICUType", "Weight")  # recorded at admission (time 00:00)
HEADER = "Time,Parameter,Value"

KNOWN_SHA256 = {  # the shared data folder's copies (MANIFEST: byte-reproducible tarballs of the records)
    "set-a.tar.gz": "abcd119bae0f9f98d5e63b7bce5b2d37c64328e7c1acacab3836d17787d841df",
    "set-b.tar.gz": "668734f4ddf290edde891057c29349a04af51090b308fd5f352d0eabeb89a975",
    "Outcomes-a.txt": "2613ea60ccda29f87571a7d6b09ad130858a8ccd66325bd073365925026883c2",
    "Outcomes-b.txt": "1305f29734da374a809483229a99f33a9230aa8d4fa74b1a2d6ad788136423d5",
}


def folder(root: str | Path | None = None) -> Path:
    return files.data_root(root) / "physionet2012"


def archive(set_name: str, root: str | Path | None = None, download: bool = False, progress: bool = True) -> Path:
    """Path of `set-<a|b>.tar.gz`, verified (and downloaded first if missing and `download`)."""
    if set_name not in KNOWN_SETS:
        raise ValueError(f"unknown PhysioNet 2012 set {set_name!r}; the challenge has {KNOWN_SETS} and the "
                         f"interpolation benchmark uses {SETS}")
    name = f"set-{set_name}.tar.gz"
    path = folder(root) / name
    if not path.is_file() and not download:
        raise files.missing_file_error(
            path, HOME, "call with download=True (with internet), or download it from that page into "
            f"{path.parent} (set {files.ENV_VAR} to the data root)", names="physionet2012")
    if download and not _intact(path):  # missing, or failing its checksum: fetched afresh
        fetch(name, path, progress)
    _verify(path)
    return path


def fetch(name: str, path: Path, progress: bool = True) -> str:
    """Download one file of the challenge to `path`, checked against PhysioNet's SHA256SUMS.txt when that
    list can be read, from the mirror or else from PhysioNet (`files.published_sums`); -> how it was verified.
    Only if neither can be read is a checksum recorded on first use (PhysioNet's archives are packed differently
    from the shared data folder's copies, so a file matching neither is no contradiction then). A file already
    at `path` that fails its checksum is moved aside first, with a warning."""
    if path.is_file():
        try:
            _verify(path)
        except files.ChecksumMismatch as e:
            warnings.warn(f"{e} (fetching it afresh now)", stacklevel=2)
    expected = files.published_sums(SUMS_URL).get(name)
    files.download_url(URL.format(name=name) + "?download", path, sha256=expected, progress=progress)
    files.add_sums(path.parent, [path.name])
    if expected:
        return f"SHA-256 checked against {SUMS_URL}"
    if KNOWN_SHA256.get(name) == files.sha256(path):
        return "SHA-256 checked against the shared data folder's copy"
    return f"SHA-256 recorded in {path.parent / 'SHA256SUMS'} (trust on first use: {SUMS_URL} could not be read)"


def present(root: str | Path | None = None, sets: tuple[str, ...] = SETS) -> bool:
    """Whether the archives of `sets` are under <root>/physionet2012/ and match KNOWN_SHA256 or SHA256SUMS (a
    file that fails is not counted, so `make data` fetches it afresh; digests remembered, `files.intact`)."""
    return all(_intact(folder(root) / f"set-{s}.tar.gz") for s in sets)


def _listed(path: Path) -> str | None:
    """The SHA-256 its folder's SHA256SUMS lists for `path` (PhysioNet's packing, checked against its list when
    fetched, or recorded on first use), if any."""
    sums_file = path.parent / "SHA256SUMS"
    return files.read_sums(sums_file).get(path.name) if sums_file.is_file() else None


def _intact(path: Path) -> bool:
    """Whether `path` is there and matches the known copy or its SHA256SUMS line (either: `_verify`), with
    remembered digests (`files.intact`); with neither to check against, whether it is there."""
    accepted = {h for h in (KNOWN_SHA256.get(path.name), _listed(path)) if h}
    return path.is_file() and (not accepted or any(files.intact(path, h) for h in accepted))


def _verify(path: Path) -> None:
    """Accept the file if it matches KNOWN_SHA256 or its folder's SHA256SUMS; if not, move it aside and raise
    ChecksumMismatch naming it, both checksums and the command that fetches it again."""
    listed, known = _listed(path), KNOWN_SHA256.get(path.name)
    if listed is None and known is None:
        return  # nothing to check against (e.g. a set-c the user placed there)
    digest = files.sha256(path)
    if digest not in (listed, known):
        names = "physionet2012" if path.name in {f"set-{s}.tar.gz" for s in SETS} else ()
        against = (("the known copy", known), (str(path.parent / "SHA256SUMS"), listed))
        raise files.corrupt(path, f"SHA-256 {digest} matches neither "
                            + " nor ".join(f"{what} ({h})" for what, h in against if h), names)


def _parse_member(text: str, where: str) -> tuple[int, list, list, list]:
    """One record file -> (record id, times [h], variable indices, values), errors naming file and line."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != HEADER:
        raise ValueError(f"{where}: line 1 must be the header {HEADER!r}, got {lines[0] if lines else ''!r}")
    index = {v: i for i, v in enumerate(VARIABLES)}
    rid, times, var, vals = None, [], [], []
    for lineno, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        parts = line.split(",")
        try:
            hh, mm = parts[0].split(":")
            t, p, v = float(hh) + float(mm) / 60.0, parts[1], float(parts[2])
            if len(parts) != 3 or not (np.isfinite(t) and np.isfinite(v)):
                raise ValueError
        except (ValueError, IndexError):
            raise ValueError(f"{where} line {lineno}: expected 'HH:MM,Parameter,Value', got {line!r}") from None
        if p == "RecordID":
            rid = int(v)
            continue
        if p not in index:
            raise ValueError(f"{where} line {lineno}: unknown parameter {p!r} (known: RecordID and "
                             f"the 41 variables of VARIABLES)")
        times.append(t)
        var.append(index[p])
        vals.append(v)
    if rid is None:
        raise ValueError(f"{where}: no RecordID line")
    stem = Path(where.split(":")[-1]).stem
    if stem.isdigit() and int(stem) != rid:
        raise ValueError(f"{where}: RecordID {rid} differs from the file name")
    return rid, times, var, vals


def parse_archive(path: str | Path, quantization: float = QUANTIZATION, progress: bool = False) -> pd.DataFrame:
    """All records of one tar.gz -> long table (record_id, time, variable, value, n_obs); see `records`."""
    from tqdm.auto import tqdm

    path = Path(path)
    ids, times, var, vals = [], [], [], []
    with tarfile.open(path) as tf:
        members = sorted((m for m in tf.getmembers() if m.isfile() and m.name.endswith(".txt")),
                         key=lambda m: m.name)
        if not members:
            raise ValueError(f"{path}: no record files (*.txt) in the archive")
        for m in tqdm(members, desc=path.name, disable=not progress, leave=False):
            where = f"{path}:{m.name}"
            try:
                text = tf.extractfile(m).read().decode("utf-8")
            except UnicodeDecodeError as err:
                raise ValueError(f"{where}: not a UTF-8 text record ({err})") from None
            rid, t, v, x = _parse_member(text, where)
            ids.append(np.full(len(t), rid, dtype=np.int64))
            times.append(np.asarray(t, dtype=np.float64))
            var.append(np.asarray(v, dtype=np.int8))
            vals.append(np.asarray(x, dtype=np.float64))
    t = np.concatenate(times)
    df = pd.DataFrame(dict(record_id=np.concatenate(ids), time=np.round(t / quantization) * quantization,
                           variable=np.concatenate(var), value=np.concatenate(vals)))
    dup = df.drop_duplicates("record_id").shape[0]
    if dup != len(members):
        raise ValueError(f"{path}: {len(members)} record files but {dup} distinct RecordIDs")
    out = (df.groupby(["record_id", "time", "variable"], sort=True)["value"].agg(["mean", "size"])
             .reset_index().rename(columns={"mean": "value", "size": "n_obs"}))
    return out.astype(dict(variable=np.int8, n_obs=np.int16))


def records(root: str | Path | None = None, sets: tuple[str, ...] = SETS, quantization: float = QUANTIZATION,
            download: bool = False, cache_dir=None, refresh: bool = False, progress: bool = True) -> pd.DataFrame:
    """The records of `sets` as one long table, cached on disk.

    Columns: record_id (int), set ("a" | "b"), time (hours since admission, quantised, float64),
    variable (index into `VARIABLES`), value (mean of the `n_obs` observations in that cell, raw units).
    Rows are sorted by (record_id, time, variable).
    """
    if not quantization > 0:
        raise ValueError(f"quantization must be a positive number of hours, got {quantization}")
    paths = {s: archive(s, root, download) for s in sets}  # verified before anything is read or cached
    key = dict(sha256={s: KNOWN_SHA256.get(p.name) or files.sha256(p) for s, p in paths.items()},
               quantization=quantization, v=1)

    def parse():
        parts = [parse_archive(p, quantization, progress).assign(set=s) for s, p in paths.items()]
        df = pd.concat(parts, ignore_index=True).sort_values(["record_id", "time", "variable"], ignore_index=True)
        return df.astype(dict(set=pd.CategoricalDtype(list(SETS))))

    # keyed on this module's source, not the whole package's: other code changes do not re-parse
    return files.memo("physionet2012_records", key, parse, sources=(__file__,), folder=cache_dir, refresh=refresh)


def split(record_ids, train_size: float = 0.8, seed: int = 42) -> tuple[np.ndarray, np.ndarray]:
    """mTAN's / HeTVAE's 80/20 split on the *sorted* distinct record ids -> (train ids, test ids)."""
    from sklearn.model_selection import train_test_split

    ids = np.unique(np.asarray(record_ids))
    if len(ids) < 2:
        raise ValueError(f"need at least 2 records to split, got {len(ids)}")
    train, test = train_test_split(ids, train_size=train_size, random_state=seed, shuffle=True)
    return np.asarray(train), np.asarray(test)


@dataclass(frozen=True)
class Scaling:
    """Per-variable affine normalisation z = (x - shift) / scale, fitted on training observations.

    `minmax` (mTAN, `normalize_masked_data`): shift = min, scale = max (not max - min: the reference code
    divides by the maximum; a maximum of 0 becomes 1). mTAN takes min and max over all 8,000 records;
    here over the training split only.
    `zscore` (HeTVAE's loaders, e.g. `get_mimiciii_data`): mean and standard deviation of the values
    between the 0.1 % and 99.95 % quantiles of each variable; a variable with at most 10 distinct values
    there is left as it is (shift 0, scale 1). Values outside the quantiles are kept, only the statistics
    ignore them.
    """

    name: str
    shift: np.ndarray  # [n_variables]
    scale: np.ndarray

    METHODS = ("minmax", "zscore")

    @classmethod
    def fit(cls, method: str, variable, value, n_variables: int = len(VARIABLES)) -> "Scaling":
        if method not in cls.METHODS:
            raise ValueError(f"unknown normalisation {method!r}; choose one of {cls.METHODS}")
        variable, value = np.asarray(variable), np.asarray(value, dtype=np.float64)
        shift, scale = np.zeros(n_variables), np.ones(n_variables)
        for j in range(n_variables):
            x = value[variable == j]
            if not len(x):
                continue
            if method == "minmax":
                shift[j], mx = x.min(), x.max()
                scale[j] = mx if mx != 0 else 1.0
            else:
                lo, hi = np.quantile(x, 0.001), np.quantile(x, 0.9995)
                kept = x[(x >= lo) & (x <= hi)]
                if len(np.unique(kept)) > 10:
                    shift[j], sd = kept.mean(), kept.std()
                    scale[j] = sd if sd > 0 else 1.0
        return cls(method, shift, scale)

    def transform(self, variable, value) -> np.ndarray:
        variable = np.asarray(variable)
        return (np.asarray(value, dtype=np.float64) - self.shift[variable]) / self.scale[variable]

    def inverse(self, variable, value) -> np.ndarray:
        variable = np.asarray(variable)
        return np.asarray(value, dtype=np.float64) * self.scale[variable] + self.shift[variable]

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(dict(variable=VARIABLES[: len(self.shift)], shift=self.shift, scale=self.scale))


def generate(n_records: int = 40, seed: int = 0, lengths: tuple[int, int] = (50, 800), longest: int | None = None,
             hours: float = 48.0, quantization: float = QUANTIZATION) -> pd.DataFrame:
    """Random records of the benchmark's shape in `records`' form (record_id, set, time, variable, value, n_obs):
    a dry run's stand-in where the archives are absent (`romae.runtime`), not data.

    Each record has the five descriptors at time 0 and distinct (time, variable) cells of the other 36
    `VARIABLES` on the `quantization` grid over `hours`; its number of cells is uniform in `lengths`, except every
    eighth record (the first included), which has `longest` (default: lengths[1]). Values: a per-variable level
    (10^-1 .. 10^3) with 10 % noise, so the scalings and baselines have something to fit."""
    longest = lengths[1] if longest is None else longest
    if n_records < 2 or not len(DESCRIPTORS) < lengths[0] <= lengths[1] or longest <= len(DESCRIPTORS):
        raise ValueError(f"need n_records >= 2, {len(DESCRIPTORS)} < lengths[0] <= lengths[1] and longest > "
                         f"{len(DESCRIPTORS)}, got {n_records}, {lengths}, {longest}")
    rng = np.random.default_rng(seed)
    level = 10 ** rng.uniform(-1, 3, len(VARIABLES))
    grid, n_desc = np.arange(int(round(hours / quantization)) + 1) * quantization, len(DESCRIPTORS)
    n_other = len(VARIABLES) - n_desc
    parts = []
    for r in range(n_records):
        n = longest if r % 8 == 0 else int(rng.integers(lengths[0], lengths[1] + 1))
        cells = rng.choice(len(grid) * n_other, size=n - n_desc, replace=False)
        var = np.r_[np.arange(n_desc), n_desc + cells % n_other]
        parts.append(pd.DataFrame(dict(record_id=100_000 + r, time=np.r_[np.zeros(n_desc), grid[cells // n_other]],
                                       variable=var, value=level[var] * (1 + 0.1 * rng.standard_normal(n)))))
    df = pd.concat(parts, ignore_index=True).sort_values(["record_id", "time", "variable"], ignore_index=True)
    df = df.assign(n_obs=1, set=pd.Categorical(np.where(df.record_id % 2 == 0, "a", "b"), categories=list(SETS)))
    return df.astype(dict(variable=np.int8, n_obs=np.int16))
