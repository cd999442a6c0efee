"""Tiny ImageNet (Le & Yang 2015): 200 classes, 64x64 RGB; the paper's Table 2 (Sec. 5.2, App. D.1).

    d = load("train")            # {"images": uint8 [N, 3, H, W], "labels": int64 [N], "classes", "names", ...}
    v = load("val")              # the 10,000 validation images (50 per class): the paper's test set

Sources, under `<root>/tiny_imagenet/` (root = $ROMAE_DATA):
- `tiny-imagenet-200.zip`, the official archive (http://cs231n.stanford.edu/tiny-imagenet-200.zip,
  248,100,043 bytes, MD5 90528d7ca1a48142e341f4ef8d21d0de): 500 training images per class at 64 px.
  `download=True` fetches it (then checks the MD5).
- `tiny-imagenet-200-32px-subset.zip`, the shared data folder's subset: every class, 100 training
  images per class, all 10,000 validation images, downsampled to 32 px (its MANIFEST; SHA-256 in
  `KNOWN_SHA256`).
- any other zip of the official layout (`source=<path>`), e.g. the full 32-px tree the subset came from.
`source="auto"` takes the official archive if it is there, else the subset. A known file is verified
against its checksum before it is read; so is any file listed in the folder's SHA256SUMS. One that differs is
moved aside (`<file>.corrupt`) with an error naming it, and `present` does not count it, so `make data` (for
the official archive) fetches it afresh.

Labels are indices into the sorted WordNet ids (what torchvision's ImageFolder and the `tinyimagenet`
package the authors used give), `names` the first WordNet lemma of each class. Official grayscale
JPEGs are converted to RGB. Decoded arrays are cached (uint8, .npy) under <repo>/.cache/romae/datasets/,
keyed by the archive's checksum and the split (`romae.store.save_arrays`), so the second load is a memory
map read.
"""

from __future__ import annotations

import contextlib

import io
import re
import zipfile
from pathlib import Path, PurePosixPath

import numpy as np
from tqdm.auto import tqdm

from .. import store
from . import files

URL = "http://cs231n.stanford.edu/tiny-imagenet-200.zip"
OFFICIAL = "tiny-imagenet-200.zip"
OFFICIAL_MD5 = "90528d7ca1a48142e341f4ef8d21d0de"  # the CS231N archive (its MANIFEST, torchvision-style)
SUBSET = "tiny-imagenet-200-32px-subset.zip"
KNOWN_SHA256 = {SUBSET: "30002f801133d0e8d7d2149a41a460ee6c99bb5d73fd45e218bc540ec300bfcd"}
SPLITS = ("train", "val")
CACHE = Path(__file__).resolve().parents[2] / ".cache" / "romae" / "datasets"


def folder(root: str | Path | None = None) -> Path:
    return files.data_root(root) / "tiny_imagenet"


def verify(path: str | Path) -> str:
    """Check an archive against its known checksum (MD5 for the official one, SHA-256 for the subset) and
    its folder's SHA256SUMS; if it differs, move it aside and raise ChecksumMismatch naming it. Returns its
    SHA-256 (the cache key)."""
    path = Path(path)
    names = "tiny_imagenet" if path.name == OFFICIAL else ()  # the subset is not downloadable
    digest = files.sha256(path)
    if path.name in KNOWN_SHA256 and digest != KNOWN_SHA256[path.name]:
        raise files.corrupt(path, f"expected SHA-256 {KNOWN_SHA256[path.name]}, got {digest}", names)
    if path.name == OFFICIAL:
        files.check_sha256(path, OFFICIAL_MD5, names, "md5", source="the official archive")
    files.verify_folder(path.parent, [path.name], names)
    return digest


def present(root: str | Path | None = None, source: str = "official") -> bool:
    """Whether the official archive (`source="official"`) or the shared subset ("subset") is under
    <root>/tiny_imagenet/ and matches its known checksum (digests remembered, `files.intact`: the 248 MB
    archive is hashed once, not on every check)."""
    base = folder(root)
    if source == "official":
        return files.intact(base / OFFICIAL, OFFICIAL_MD5, "md5")
    return files.intact(base / SUBSET, KNOWN_SHA256[SUBSET])


def download(root: str | Path | None = None, progress: bool = True) -> Path:
    """Fetch the official archive into <root>/tiny_imagenet/ (248 MB), check its MD5, return its path. A
    download cut short resumes on the next call; a corrupt one is removed; one already there that fails its
    MD5 is moved aside (with a warning) and fetched afresh."""
    dest = folder(root) / OFFICIAL
    if not present(root):
        files.set_aside(dest, OFFICIAL_MD5, "md5", names="tiny_imagenet")
        files.download_url(URL, dest, md5=OFFICIAL_MD5, progress=progress)
    verify(dest)
    return dest


def find(root: str | Path | None = None, source: str | Path = "auto", download_missing: bool = False) -> Path:
    """The archive to read: source = "auto" | "official" | "subset" | a path to a zip of the official layout."""
    if source not in ("auto", "official", "subset"):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"Tiny ImageNet archive not found: {path}")
        return path
    base = folder(root)
    official, subset = base / OFFICIAL, base / SUBSET
    if download_missing and source in ("auto", "official") and not present(root):  # missing or corrupt: fetched
        return download(root)
    if source in ("auto", "official") and official.is_file():
        return official
    if source in ("auto", "subset") and subset.is_file():
        return subset
    raise files.missing_file_error(
        subset if source == "subset" else official, URL,
        f"pass download=True for the official archive (needs internet, 248 MB), or put {OFFICIAL} or {SUBSET} "
        f"in {base}", names="tiny_imagenet")


def _members(zf: zipfile.ZipFile) -> tuple[str, dict[str, str]]:
    """(prefix of the official tree inside the zip, {file name: member}) for the text files."""
    names = zf.namelist()
    wnids = sorted((n for n in names if PurePosixPath(n).name == "wnids.txt"), key=lambda n: n.count("/"))
    if not wnids:
        raise ValueError(f"{zf.filename} has no wnids.txt: not a Tiny ImageNet archive of the official layout")
    prefix = wnids[0][: -len("wnids.txt")]
    return prefix, {n[len(prefix):]: n for n in names if n.startswith(prefix)}


def _decode(data: bytes, what: str) -> np.ndarray:
    from PIL import Image  # Pillow comes with matplotlib; imported here so `import romae` stays light

    try:
        with Image.open(io.BytesIO(data)) as im:
            return np.asarray(im.convert("RGB"))
    except Exception as e:  # PIL raises several types for a broken file
        raise ValueError(f"cannot decode image {what}: {e}") from None


def read_zip(path: str | Path, split: str = "train", progress: bool = True) -> dict:
    """Decode one split of an archive of the official layout -> {images uint8 [N, 3, H, W], labels,
    classes (sorted WordNet ids), names, files (member names)}. Images must all have one size."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {SPLITS} (the official test split has no labels)")
    path = Path(path)
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise ValueError(f"{path} is not a zip file") from None
    with zf:
        prefix, members = _members(zf)
        classes = sorted(zf.read(prefix + "wnids.txt").decode().split())
        index = {w: i for i, w in enumerate(classes)}
        words = dict(line.split("\t", 1) for line in zf.read(members["words.txt"]).decode().splitlines()
                     if "\t" in line) if "words.txt" in members else {}
        names = [words.get(w, w).split(",")[0].strip() for w in classes]
        if split == "train":
            pattern = re.compile(r"train/(n\d+)/images/[^/]+\.jpe?g", re.IGNORECASE)
            chosen = sorted((rel, m.group(1)) for rel in members if (m := pattern.fullmatch(rel)))
        else:
            if "val/val_annotations.txt" not in members:
                raise ValueError(f"{path} has no val/val_annotations.txt")
            table = dict(line.split("\t")[:2] for line in
                         zf.read(members["val/val_annotations.txt"]).decode().splitlines() if line.strip())
            chosen = sorted(((f"val/images/{f}", w) for f, w in table.items()), key=lambda r: _natural(r[0]))
            absent = [rel for rel, _ in chosen if rel not in members]
            if absent:
                raise ValueError(f"{path}: {len(absent)} validation images listed in val_annotations.txt are "
                                 f"missing, e.g. {absent[0]}")
        unknown = sorted({w for _, w in chosen} - set(index))
        if unknown:
            raise ValueError(f"{path}: {split} images of classes not in wnids.txt, e.g. {unknown[:3]}")
        if not chosen:
            raise ValueError(f"{path} holds no {split} images")
        images, shape = None, None
        for i, (rel, _) in enumerate(tqdm(chosen, desc=f"decode {split}", disable=not progress, leave=False)):
            img = _decode(zf.read(members[rel]), f"{rel} in {path}")
            if images is None:
                shape = img.shape
                images = np.empty((len(chosen), 3, *shape[:2]), dtype=np.uint8)
            elif img.shape != shape:
                raise ValueError(f"{rel} in {path} is {img.shape[1]}x{img.shape[0]} px, the others "
                                 f"{shape[1]}x{shape[0]}: resize the archive's images to one size")
            images[i] = img.transpose(2, 0, 1)
    labels = np.array([index[w] for _, w in chosen], dtype=np.int64)
    return dict(images=images, labels=labels, classes=classes, names=names, files=[r for r, _ in chosen])


def _natural(s: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def load(split: str = "train", root: str | Path | None = None, source: str | Path = "auto",
         download: bool = False, cache: bool = True, progress: bool = True) -> dict:
    """One split -> {images uint8 [N, 3, H, W], labels int64 [N], classes, names, files, source, path,
    digest (the archive's SHA-256), resolution}.

    source: "auto" (the official archive if present, else the shared 32-px subset), "official",
    "subset", or a path. download=True fetches the official archive when it is missing.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose one of {SPLITS} (the official test split has no labels)")
    path = find(root, source, download_missing=download)
    digest = verify(path)
    kind = "official" if path.name == OFFICIAL else "subset" if path.name == SUBSET else "other"
    entry = CACHE / f"tiny_imagenet-{digest[:16]}-{split}"  # images.npy, labels.npy, meta.json
    # several processes (a multi-GPU launch on an empty cache): one decodes, the others wait and load it
    with store.build_lock(entry) if cache else contextlib.nullcontext():
        if cache and (entry / "meta.json").is_file():
            arrays, info = store.load_arrays(entry, ("images", "labels"))
            out = dict(info, images=arrays["images"], labels=np.array(arrays["labels"]))
        else:
            out = read_zip(path, split, progress=progress)
            if cache:
                try:
                    store.save_arrays(entry, {k: out[k] for k in ("images", "labels")},
                                      {k: out[k] for k in ("classes", "names", "files")})
                except OSError as e:  # a read-only checkout: decode again next time
                    import warnings

                    warnings.warn(f"cannot cache the decoded images in {CACHE} ({e}); they are decoded on every "
                                  "load", stacklevel=2)
    out.update(source=kind, path=str(path), digest=digest, resolution=int(out["images"].shape[-1]))
    return out


__all__ = ["load", "read_zip", "find", "verify", "present", "download", "URL", "OFFICIAL", "SUBSET", "OFFICIAL_MD5"]
