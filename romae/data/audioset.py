"""AudioSet-20k (Gemmeke et al. 2017, the balanced training set): Table 3's other pre-training set.

AudioSet ships no audio: the paper took the clips from the Hugging Face dataset `agkphysics/AudioSet`;
others download them from YouTube. This reader takes a user's folder of clips and matches them to the
official segment list, `<root>/audioset_meta/balanced_train_segments.csv` (22,160 segments, 527 labels):

    d = load("/path/to/clips")     # {"waves", "ids", "labels" (multi-hot [N, 527]), "found", "expected"}

A clip matches a segment by its YouTube id: a file named `<YTID>.wav|.flac|.ogg|.mp3` or
`Y<YTID>_<start>_<end>.<ext>` (the common download scripts' names). Clips are read as mono, resampled to
16 kHz and cut or zero-padded to 10 s. How many of the 22,160 were found is returned (many videos are gone).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from . import files

HOME = "https://research.google.com/audioset/download.html"
HF = "https://huggingface.co/datasets/agkphysics/AudioSet"
KNOWN_SHA256 = {
    "balanced_train_segments.csv": "3b83e5ff9ed72cfda37d4e36ce08250e107c1ea70f109f6ab6668ac200db5e94",
    "class_labels_indices.csv": "156bdda27a7ef1797c977834c24d3e93e1df6d7e5c21b53ca52d56ea1cb05ac9",
}
EXTENSIONS = (".wav", ".flac", ".ogg", ".mp3")
META_URL = "http://storage.googleapis.com/us_audioset/youtube_corpus/v1/csv/{name}"  # the segment lists' home


def meta_present(root=None) -> bool:
    """Whether both lists are under <root>/audioset_meta/ and match their known SHA-256 (a file that does not is
    not counted, so `make data` fetches it afresh; digests remembered, `files.intact`)."""
    meta = files.data_root(root) / "audioset_meta"
    return all(files.intact(meta / name, digest) for name, digest in KNOWN_SHA256.items())


def download_meta(root=None, progress: bool = True) -> list[Path]:
    """Fetch the balanced training segment list and the label index into <root>/audioset_meta/ (2 MB),
    each checked against its known SHA-256 whatever a mirror serves; a copy there that differs is moved aside
    (`<name>.corrupt`, with a warning) and fetched afresh. (The audio is not downloadable from here: see `HF`.)"""
    meta = files.data_root(root) / "audioset_meta"
    out = []
    for name, digest in KNOWN_SHA256.items():
        if not files.intact(meta / name, digest):
            files.set_aside(meta / name, digest, names="audioset-meta")
            files.download_url(META_URL.format(name=name), meta / name, sha256=digest, progress=progress)
        files.check_sha256(meta / name, digest, "audioset-meta")
        out.append(meta / name)
    return out


def segments(root=None) -> tuple[list[dict], list[str]]:
    """(segments [{ytid, start, end, labels}], label ids in index order) of the balanced training set."""
    meta = files.data_root(root) / "audioset_meta"
    seg, idx = meta / "balanced_train_segments.csv", meta / "class_labels_indices.csv"
    for f in (seg, idx):
        if not f.is_file():
            raise files.missing_file_error(f, HOME, "download the segment lists from the AudioSet site",
                                           names="audioset-meta")
        files.check_sha256(f, KNOWN_SHA256[f.name], "audioset-meta")
    rows = []
    for line in seg.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        ytid, start, end, labels = next(csv.reader([line], skipinitialspace=True))
        rows.append(dict(ytid=ytid, start=float(start), end=float(end), labels=labels.split(",")))
    with open(idx, newline="") as f:  # index,mid,display_name (the official file's header may be absent)
        mids = [r[1] for r in csv.reader(f) if r and r[0] != "index"]
    return rows, mids


def _ytid(stem: str, known: set) -> str | None:
    if stem.startswith("Y") and stem[1:12] in known:
        return stem[1:12]
    return stem[:11] if stem[:11] in known else None


def load(clips: str | Path, root=None, sample_rate: int = 16000, seconds: float = 10.0,
         max_clips: int | None = None, progress: bool = True, features=None) -> dict:
    """Clips of the balanced training set found in `clips` -> {waves float32 [N, n], ids, labels [N, 527],
    found, expected}. Files that match no segment are ignored (counted in `unmatched`).

    `features`: a function of one clip's float32 waveform (e.g. `romae.audio.fbank`); the result then holds
    `features` (one per clip) instead of `waves`, so 20,000 ten-second waveforms (12.8 GB) never sit in
    memory at once."""
    from .esc50 import _read  # mono + polyphase resampling

    rows, mids = segments(root)
    by_id = {r["ytid"]: r for r in rows}
    paths = sorted(p for p in Path(clips).rglob("*") if p.suffix.lower() in EXTENSIONS)
    matched = [(p, y) for p in paths if (y := _ytid(p.stem, set(by_id))) is not None][:max_clips]
    if not matched:
        raise FileNotFoundError(f"no clip in {clips} matches a segment of balanced_train_segments.csv (files "
                                f"named <YTID>.wav or Y<YTID>_<start>_<end>.wav); get the audio from {HF}")
    n = int(seconds * sample_rate)
    waves = np.zeros((0 if features else len(matched), n), dtype=np.float32)
    feats = []
    labels = np.zeros((len(matched), len(mids)), dtype=np.float32)
    col = {m: i for i, m in enumerate(mids)}
    for i, (p, y) in enumerate(tqdm(matched, desc="read AudioSet", disable=not progress, leave=False)):
        x = np.zeros(n, dtype=np.float32)
        clip = _read(p, sample_rate)[:n]
        x[: len(clip)] = clip
        if features is None:
            waves[i] = x
        else:
            feats.append(features(x))
        labels[i, [col[m] for m in by_id[y]["labels"] if m in col]] = 1.0
    out = dict(ids=[y for _, y in matched], labels=labels, classes=mids, found=len(matched), expected=len(rows),
               unmatched=len(paths) - len(matched), sample_rate=sample_rate)
    return dict(out, **({"waves": waves} if features is None else {"features": feats}))


__all__ = ["load", "segments", "download_meta", "meta_present"]
