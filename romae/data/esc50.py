"""ESC-50 (Piczak 2015): 2,000 five-second environmental sounds, 50 classes, 5 folds; the paper's Table 3.

    d = load()          # {"waves": float32 [N, 80000] at 16 kHz, "labels", "folds", "classes", "meta", ...}

Sources, under `<root>/esc50/` (root = $ROMAE_DATA):
- the shared subset: `audio_16k/<name>.flac` (16 kHz mono, resampled from the originals) with the official
  `esc50.csv`; every file is checked against the folder's SHA256SUMS;
- the official repository (`download=True` fetches https://github.com/karolpiczak/ESC-50/archive/master.zip,
  about 600 MB) unpacked as `ESC-50-master/` with `audio/*.wav` at 44.1 kHz and `meta/esc50.csv`. The
  archive has no published checksum: it is trusted on first use and written to SHA256SUMS; clips listed
  in `original_wav_sha256.tsv` (the shared folder's hashes of 414 original WAVs) are verified. Clips are
  resampled to 16 kHz with SciPy's polyphase filter (up 160, down 441), as the shared subset was.
A file that fails its checksum is moved aside (`<file>.corrupt`) with an error naming it; the official set
then is not `present` (every clip esc50.csv lists must be there), so `make data NAMES=esc50` fetches it again.
`source="auto"` takes the official clips if present, else the subset. Labels are ESC-50's `target`
(0-49, `classes[k]` its category); `folds` the official folds 1-5 (clips of one recording share a fold).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from . import files

URL = "https://github.com/karolpiczak/ESC-50/archive/master.zip"
SAMPLE_RATE = 16000
OFFICIAL_DIR = "ESC-50-master"
KNOWN_SHA256 = {"esc50.csv": "ca660da60191a97de289983a05821c9382d852a38a2ba8428980816b68cf6246"}


def folder(root=None) -> Path:
    return files.data_root(root) / "esc50"


def _official(base: Path) -> Path | None:
    d = base / OFFICIAL_DIR
    return d if (d / "meta" / "esc50.csv").is_file() and (d / "audio").is_dir() else None


def download(root=None, progress: bool = True) -> Path:
    """Fetch and unpack the official repository archive into <root>/esc50/ESC-50-master/ (~600 MB).

    A download cut short resumes on the next call; a zip that does not unpack into that layout is removed
    with an error (`files.fetch_archive`)."""
    base = folder(root)
    if present(root, "official"):
        return _official(base)
    def unpack(zip_path: Path) -> None:
        with zipfile.ZipFile(zip_path) as z:
            z.extractall(base)
        if _official(base) is None:
            raise ValueError(f"it did not unpack into {base / OFFICIAL_DIR} with meta/esc50.csv and audio/")

    # no published checksum: recorded (trust on first use)
    files.fetch_archive(URL, base / "ESC-50-master.zip", unpack, what="zip", progress=progress)
    return _official(base)


def present(root=None, source: str = "official") -> bool:
    """Whether the official set (`source="official"`: every clip its esc50.csv lists, those with a known SHA-256
    intact) or the shared subset ("subset": esc50.csv matching its known SHA-256, and clips) is under
    <root>/esc50. Digests are remembered (`files.intact`): a clip is hashed once, not on every check."""
    base = folder(root)
    if source == "subset":
        return files.intact(base / "esc50.csv", KNOWN_SHA256["esc50.csv"]) and any((base / "audio_16k").glob("*.flac"))
    if (official := _official(base)) is None:
        return False
    try:
        clips = pd.read_csv(official / "meta" / "esc50.csv").filename
    except (ValueError, AttributeError, OSError):  # not the official table
        return False
    known = _known_clips(base)
    return all(files.intact(official / "audio" / f, known.get(f)) for f in clips)


def _known_clips(base: Path) -> dict:
    """{clip: SHA-256} from `original_wav_sha256.tsv` (the shared folder's hashes of original WAVs), if it is there."""
    known = base / "original_wav_sha256.tsv"
    return pd.read_csv(known, sep="\t", dtype=str).set_index("filename").iloc[:, 0].to_dict() if known.is_file() else {}


def _read(path: Path, rate: int) -> np.ndarray:
    import soundfile as sf  # audio-only dependency, imported when audio is read

    x, sr = sf.read(path, dtype="float32", always_2d=True)
    x = x.mean(1)  # mono
    if sr != rate:
        from math import gcd

        from scipy.signal import resample_poly

        g = gcd(int(sr), int(rate))
        x = resample_poly(x, rate // g, int(sr) // g).astype(np.float32)
    return x


def load(root=None, source: str = "auto", download: bool = False, sample_rate: int = SAMPLE_RATE,
         progress: bool = True, per_fold: int | None = None) -> dict:
    """All clips found -> {waves float32 [N, n], labels int64, folds int64, classes, meta, source, path}.

    source: "auto" | "official" | "subset". Clips are read as mono, resampled to `sample_rate`, and
    trimmed or zero-padded to 5 s (ESC-50's clips are all 5 s long). per_fold: read only the first this many
    clips of each fold (a dry run).
    """
    if source not in ("auto", "official", "subset"):
        raise ValueError(f"unknown source {source!r}; choose auto, official or subset")
    base = folder(root)
    official = _official(base)
    if official is None and download and source in ("auto", "official"):
        official = globals()["download"](root)
    if source == "official" or (source == "auto" and official is not None):
        if official is None:
            raise files.missing_file_error(base / OFFICIAL_DIR / "meta" / "esc50.csv", URL,
                                           "pass download=True (needs internet, ~600 MB)", names="esc50")
        meta = full = pd.read_csv(official / "meta" / "esc50.csv")
        paths = [official / "audio" / f for f in meta.filename]
        kind, where = "official", official
        sums = _known_clips(base)
        for f, p in zip(meta.filename, paths):
            if f in sums and p.is_file():
                files.check_sha256(p, sums[f], "esc50")
        files.check_quarantined(official / "audio", "*.wav", "esc50")
    else:
        csv = base / "esc50.csv"
        if not csv.is_file():
            raise files.missing_file_error(csv, URL, f"pass download=True for the official set (needs internet), "
                                                     f"or put the shared subset in {base}", names="esc50")
        files.check_sha256(csv, KNOWN_SHA256["esc50.csv"])
        files.check_quarantined(base / "audio_16k", "*.flac")  # the subset tolerates absent clips, not corrupt ones
        meta = full = pd.read_csv(csv)
        paths = [base / "audio_16k" / f.replace(".wav", ".flac") for f in meta.filename]
        present = np.array([p.is_file() for p in paths])
        if not present.any():
            raise files.missing_file_error(base / "audio_16k", URL, "pass download=True (needs internet)", names="esc50")
        meta, paths = meta[present].reset_index(drop=True), [p for p, ok in zip(paths, present) if ok]
        files.verify_folder(base, [str(p.relative_to(base)) for p in paths])
        kind, where = "subset", base
    if per_fold is not None:
        keep = meta.groupby("fold").cumcount().to_numpy() < per_fold
        meta, paths = meta[keep].reset_index(drop=True), [p for p, k in zip(paths, keep) if k]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"{len(missing)} clips listed in esc50.csv are missing, e.g. {missing[0]}")
    length = 5 * sample_rate
    waves = np.zeros((len(paths), length), dtype=np.float32)
    for i, p in enumerate(tqdm(paths, desc="read ESC-50", disable=not progress, leave=False)):
        x = _read(p, sample_rate)[:length]
        waves[i, : len(x)] = x
    classes = full.drop_duplicates("target").sort_values("target").category.tolist()  # all 50, even if absent
    return dict(waves=waves, labels=meta.target.to_numpy(np.int64), folds=meta.fold.to_numpy(np.int64),
                classes=classes, meta=meta, source=kind, path=str(where), sample_rate=sample_rate)


__all__ = ["load", "download", "present", "URL", "SAMPLE_RATE"]
