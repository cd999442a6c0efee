"""LibriSpeech (Panayotov et al. 2015): read English speech at 16 kHz; one of Table 3's pre-training sets.

    d = load("test-clean")      # {"waves": [float32 arrays], "ids", "speakers", "seconds", ...}

Files under `<root>/librispeech/LibriSpeech/<split>/<speaker>/<chapter>/<utterance>.flac` (the official
layout; root = $ROMAE_DATA). Files listed in `<root>/librispeech/SHA256SUMS` (the shared sample's four
utterances) are verified; one that differs is moved aside (`<file>.corrupt`) with an error naming it, and
the split is not `present` until it is fetched again. `download=True` fetches a split from OpenSLR
(https://www.openslr.org/12; e.g. dev-clean 337 MB, train-clean-100 6.3 GB), checked against OpenSLR's MD5
for the splits in `KNOWN_MD5`; another split's archive is trusted on first use and written to SHA256SUMS.
The paper pre-trains on LibriSpeech prepared with SSAST's scripts and a 70/30 split (`split_utterances`);
which splits it used is not stated.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from . import files

URL = "https://www.openslr.org/resources/12/{split}.tar.gz"
SPLITS = ("dev-clean", "dev-other", "test-clean", "test-other", "train-clean-100", "train-clean-360",
          "train-other-500")


def folder(root=None) -> Path:
    return files.data_root(root) / "librispeech"


# OpenSLR's published MD5 of the splits used here (https://www.openslr.org/12); others: recorded on first use
KNOWN_MD5 = {"dev-clean": "42e2234ba48799c1f50f24a7926300a1", "test-clean": "32fa31d27d2e1cad72775fee3f4849a9",
             "train-clean-100": "2a93770f6d5c6c964bc36631d331a522"}


def download(split: str, root=None, progress: bool = True) -> Path:
    """Fetch and unpack one split into <root>/librispeech/LibriSpeech/<split>/ (train-clean-100: 6.3 GB). A
    download cut short resumes on the next call; an archive that does not unpack is removed."""
    if split not in SPLITS:
        raise ValueError(f"unknown LibriSpeech split {split!r}; choose one of {SPLITS}")
    base = folder(root)
    def unpack(archive: Path) -> None:
        with tarfile.open(archive) as t:
            t.extractall(base, filter="data")

    # a split without a published checksum has its SHA-256 recorded (trust on first use)
    files.fetch_archive(URL.format(split=split), base / f"{split}.tar.gz", unpack, what="tar.gz",
                        md5=KNOWN_MD5.get(split), record=split not in KNOWN_MD5, progress=progress)
    return base / "LibriSpeech" / split


def present(split: str = "train-clean-100", root=None) -> bool:
    """Whether the split's FLAC files are under <root>/librispeech/LibriSpeech/<split>/, none moved aside after
    failing its checksum (`files.quarantined`)."""
    d = folder(root) / "LibriSpeech" / split
    return d.is_dir() and any(d.glob("*/*/*.flac")) and not files.quarantined(d, "*/*/*.flac")


def utterances(split: str = "test-clean", root=None, download: bool = False) -> list[Path]:
    """The split's FLAC files, sorted; FileNotFoundError naming the URL if there are none."""
    if split not in SPLITS:
        raise ValueError(f"unknown LibriSpeech split {split!r}; choose one of {SPLITS}")
    d = folder(root) / "LibriSpeech" / split
    found = sorted(d.glob("*/*/*.flac")) if d.is_dir() else []
    if not found and download:
        globals()["download"](split, root)
        found = sorted(d.glob("*/*/*.flac"))
    if not found:
        raise files.missing_file_error(d, URL.format(split=split), "pass download=True (needs internet)",
                                       names=f"librispeech:{split}")
    return found


def load(split: str = "test-clean", root=None, download: bool = False, max_utterances: int | None = None,
         progress: bool = True, features=None) -> dict:
    """Utterances of a split -> {waves: list of float32 [n_i] at 16 kHz, ids, speakers, seconds, split}.

    `features`: a function of one utterance's waveform (e.g. `romae.audio.fbank`); the result then holds
    `features` instead of `waves` (train-clean-100 alone is 100 h: 23 GB of float32 samples)."""
    import soundfile as sf

    paths = utterances(split, root, download)[:max_utterances]
    base = folder(root)
    files.check_quarantined(base / "LibriSpeech" / split, "*/*/*.flac", f"librispeech:{split}")
    files.verify_folder(base, [str(p.relative_to(base)) for p in paths], f"librispeech:{split}")
    out, seconds = [], []
    for p in tqdm(paths, desc=f"read {split}", disable=not progress, leave=False):
        x, sr = sf.read(p, dtype="float32")
        if sr != 16000:
            raise ValueError(f"LibriSpeech is 16 kHz; {p} is {sr} Hz")
        x = x if x.ndim == 1 else x.mean(1)
        seconds.append(len(x) / sr)
        out.append(x if features is None else features(x))
    ids = [p.stem for p in paths]
    return {"waves" if features is None else "features": out, "ids": ids, "speakers": [i.split("-")[0] for i in ids],
            "seconds": np.array(seconds), "split": split, "sample_rate": 16000}


def split_utterances(ids, train: float = 0.7, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The paper's 70/30 split of utterances -> (train indices, validation indices), random under `seed`."""
    n = len(ids)
    perm = np.random.default_rng(seed).permutation(n)
    k = int(round(train * n))
    return np.sort(perm[:k]), np.sort(perm[k:])


__all__ = ["load", "utterances", "download", "present", "split_utterances", "SPLITS", "URL"]
