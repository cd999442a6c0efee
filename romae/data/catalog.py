"""Every public data set the notebooks use, by name: what it is, where it comes from, whether it is under
the data root, and how to fetch it. `make data NAMES=...` and `python -m romae.data` go through here.

    python -m romae.data status                        # what is here, what is missing, where; then the rest
                                                       # under the data root (`found`): own UEA sets, unknown folders
    python -m romae.data fetch physionet2012 uea:JapaneseVowels esc50
    make data NAMES=physionet2012,uea:JapaneseVowels   # the same; `make data` alone fetches ALL

Names: `physionet2012`, `uea:<Name>` (any data set of the UEA/UCR archive; `uea` alone = Table 6's five),
`esc50`, `tiny_imagenet`, `librispeech:<split>` (`librispeech` = train-clean-100), `elasticc`,
`elasticc-sample`, `audioset-meta`; and two that only the project's shared data folder has (`esc50-subset`,
`tiny_imagenet-subset`: not published, so not fetchable; the official sets above replace them).

Each download goes into the data root (`files.data_root`: $ROMAE_DATA, else <repo>/data), resumes if
it was cut short, and is checked against the publisher's checksum where there is one (Tiny ImageNet's
MD5, PhysioNet's SHA256SUMS.txt, OpenSLR's MD5s) or a known one (the UEA files of Table 6 we hold, the
SNANA sample, AudioSet's lists), whatever a mirror serves: bytes that differ are refused and nothing is
recorded. Only where no checksum is known is its SHA-256 recorded in SHA256SUMS on first download (trust on
first use); every later load checks it, and a SHA256SUMS line never overrides a known checksum (PhysioNet's
archives are packed differently from the shared copies, so there either the shared copy's or PhysioNet's is
accepted).

A data set is "here" (`Dataset.present`, hence `status`, `missing` and fetch's "already here") only if its
files match those checksums: a corrupt file is not counted, so `make data` fetches it afresh, first moving
the bad one aside to `<file>.corrupt` with a warning naming it and both checksums; a load that meets one does
the same and raises `files.ChecksumMismatch` with the `make data NAMES=...` command. Presence checks remember
each file's digest by size and mtime (`files.intact`, `.verified.json` beside the data), so a big file is
hashed once, not on every check. (LibriSpeech, ESC-50 and the ELAsTiCC training sample are unpacked from
archives checked at download; at load, their files with a listed checksum are checked, and one moved aside
makes the load stop rather than read fewer files.)

A notebook says what it needs through its experiment module's `data_needs(profile, **parameters)`, a
list of `Need`s; `missing(needs)` tells which are not here and `romae.runner.reproduce` skips the notebook
(status "skipped", with the fetch command) instead of running it without its data.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from . import audioset, elasticc, esc50, files, librispeech, physionet, tiny_imagenet, uea


@dataclass(frozen=True)
class Dataset:
    """One fetchable (or, `public=False`, only shared) data set under the data root."""

    name: str  # what `make data NAMES=` takes
    title: str
    size: str  # download size, for the plan printed before fetching
    source: str  # the official page or archive
    folder: str  # its folder under the data root
    present: Callable[[Path], bool]
    fetch: Callable[[Path, bool], object] | None  # (root, progress) -> what it wrote; None: not public
    note: str = ""


def _uea(name: str) -> Dataset:
    uea._check_name(name)
    return Dataset(f"uea:{name}", f"UEA/UCR archive: {name}", "varies", uea.URL.format(name=name),
                   f"uea/{name}", lambda root: uea.present(name, root),
                   lambda root, progress: uea.download(name, root, progress))


def _librispeech(split: str) -> Dataset:
    if split not in librispeech.SPLITS:
        raise ValueError(f"unknown LibriSpeech split {split!r}; choose one of {librispeech.SPLITS}")
    size = {"train-clean-100": "6.3 GB", "test-clean": "346 MB", "dev-clean": "337 MB"}.get(split, "several GB")
    return Dataset(f"librispeech:{split}", f"LibriSpeech {split}", size, librispeech.URL.format(split=split),
                   f"librispeech/LibriSpeech/{split}", lambda root: librispeech.present(split, root),
                   lambda root, progress: librispeech.download(split, root, progress))


def _physionet_fetch(root: Path, progress: bool) -> list[str]:
    done = []
    for s in physionet.SETS:
        path = physionet.folder(root) / f"set-{s}.tar.gz"
        how = "already here" if physionet.present(root, (s,)) else physionet.fetch(path.name, path, progress)
        physionet.archive(s, root)  # verified
        done.append(f"{path} ({how})")
    return done


FIXED = {
    "physionet2012": Dataset(
        "physionet2012", "PhysioNet/CinC Challenge 2012, set-a and set-b (8,000 ICU records)", "13 MB", physionet.HOME,
        "physionet2012", lambda root: physionet.present(root), _physionet_fetch),
    "esc50": Dataset(
        "esc50", "ESC-50, the official 2,000 clips (44.1 kHz)", "600 MB", esc50.URL, "esc50/ESC-50-master",
        lambda root: esc50.present(root, "official"), lambda root, progress: esc50.download(root, progress)),
    "esc50-subset": Dataset(
        "esc50-subset", "ESC-50 subset of the project's shared data (414 clips at 16 kHz)", "37 MB", esc50.URL,
        "esc50", lambda root: esc50.present(root, "subset"), None,
        note="not published; the official set (esc50) replaces it"),
    "tiny_imagenet": Dataset(
        "tiny_imagenet", "Tiny ImageNet, the official archive (64 px, 100,000 training images)", "248 MB",
        tiny_imagenet.URL, "tiny_imagenet", lambda root: tiny_imagenet.present(root, "official"),
        lambda root, progress: tiny_imagenet.download(root, progress)),
    "tiny_imagenet-subset": Dataset(
        "tiny_imagenet-subset", "Tiny ImageNet subset of the project's shared data (32 px, 20,000 training images)",
        "35 MB", tiny_imagenet.URL, "tiny_imagenet",
        lambda root: tiny_imagenet.present(root, "subset"), None,
        note="not published; the official archive (tiny_imagenet) replaces it"),
    "elasticc": Dataset(
        "elasticc", "ELAsTiCC training sample (SNANA FITS, ~1.8 M light curves)", "tens of GB", elasticc.URL,
        f"elasticc/{elasticc.FULL}", lambda root: elasticc.present(root),
        lambda root, progress: elasticc.download(root, progress)),
    "elasticc-sample": Dataset(
        "elasticc-sample", "SNANA FITS sample in ELAsTiCC's format (200 SN Ia; the notebook's reader demo)", "3.8 MB",
        elasticc.SAMPLE_URL.format(name=""), f"elasticc/{elasticc.SAMPLE}", lambda root: elasticc.sample_present(root),
        lambda root, progress: elasticc.download_sample(root, progress)),
    "audioset-meta": Dataset(
        "audioset-meta", "AudioSet segment lists (balanced train) and label index, no audio", "2.4 MB", audioset.HOME,
        "audioset_meta", lambda root: audioset.meta_present(root),
        lambda root, progress: audioset.download_meta(root, progress)),
}
# what `make data` fetches with no NAMES: every public data set a notebook uses (ELAsTiCC alone is tens of GB)
ALL = ("physionet2012", "uea", "esc50", "tiny_imagenet", "librispeech", "audioset-meta", "elasticc-sample", "elasticc")


def get(name: str) -> Dataset:
    """The catalog entry of `name` (see the module docstring); ValueError naming the choices."""
    name = name.strip()
    kind, _, arg = name.partition(":")
    if kind == "uea" and arg:
        return _uea(arg)
    if kind == "librispeech":
        return _librispeech(arg or "train-clean-100")
    if name in FIXED:
        return FIXED[name]
    raise ValueError(f"unknown data set {name!r}; choose from {', '.join(FIXED)}, uea (Table 6's five), "
                     f"uea:<Name>, librispeech[:<split>]")


def expand(names: Iterable[str] | str) -> list[Dataset]:
    """Names (a list, or one comma/space-separated string; `uea` = Table 6's five; empty = ALL) -> entries,
    each once, in order."""
    if isinstance(names, str):
        names = [n for n in re.split(r"[,\s]+", names) if n]
    names = list(names) or list(ALL)
    out: dict[str, Dataset] = {}
    for n in names:
        for m in ([f"uea:{d}" for d in uea.TABLE6] if n.strip() == "uea" else [n]):
            d = get(m)
            out.setdefault(d.name, d)
    return list(out.values())


@dataclass(frozen=True)
class Need:
    """What a notebook needs: one of `any_of` (catalog names) under the data root. `optional`: the notebook
    runs without it (a figure or an extra row fewer, said in its output)."""

    any_of: tuple[str, ...]  # in order of preference: the first fetchable one is what `make data` is told to get
    what: str
    optional: bool = False
    how: str = ""  # how to get it when no catalog entry can fetch it (e.g. AudioSet audio)

    def satisfied(self, root=None) -> bool:
        root = files.data_root(root)
        return any(_present(n, root) for n in self.any_of)

    def fetchable(self) -> list[str]:
        """The names among any_of that `make data` can fetch."""
        return [n for n in self.any_of if not n.startswith("path:") and get(n).fetch is not None]

    def message(self, root=None) -> str:
        """'<what> (<names>) is not under <root>: <command>' for a report or an error."""
        names = self.fetchable()
        where = files.describe_root(root)
        others = f" (or another of: {', '.join(names[1:])})" if len(names) > 1 else ""
        get_it = self.how or (f"`{files.fetch_command(names[0])}`{others}" if names else "it is not downloadable from here")
        which = "one of " if len(self.any_of) > 1 else ""
        return f"needs {self.what} ({which}{', '.join(self.any_of)}), not under the data root {where}; to get it: {get_it}"


def _present(name: str, root: Path) -> bool:
    if name.startswith("path:"):  # a user's own file or folder (AudioSet clips, a zip), given as a parameter
        return bool(name[5:]) and Path(name[5:]).expanduser().exists()
    return bool(get(name).present(root))


def missing(needs: Iterable[Need], root=None, optional: bool = False) -> list[Need]:
    """The needs not satisfied under the data root: required ones, or (`optional=True`) optional ones."""
    return [n for n in needs if n.optional == optional and not n.satisfied(root)]


def require(needs: Iterable[Need], root=None) -> None:
    """Raise DataMissing naming every required need that is not under the data root (and how to fetch it)."""
    gone = missing(needs, root)
    if gone:
        raise files.DataMissing("; ".join(n.message(root) for n in gone),
                                tuple(n.fetchable()[0] for n in gone if n.fetchable()))


def fetch_needs(needs: Iterable[Need], root=None, progress: bool = True, log=print) -> list[Need]:
    """Fetch what `needs` lack (for an any_of, its first fetchable name) -> the needs still missing."""
    left = []
    for need in needs:
        if need.satisfied(root):
            continue
        names = need.fetchable()
        if not names:
            left.append(need)
            continue
        fetch([names[0]], root, progress, log)
        if not need.satisfied(root):
            left.append(need)
    return left


def fetch(names, root=None, progress: bool = True, log=print) -> dict[str, str]:
    """Download each data set of `names` (see `expand`) unless it is here -> {name: what happened}.

    Each one is tried even if an earlier one failed; the failures are raised together at the end
    (RuntimeError listing them), so one broken download does not stop the others."""
    root = files.data_root(root)
    done, failed = {}, {}
    entries = expand(names)
    log(f"== data root: {files.describe_root(None if root == files.data_root() else root)}")
    for d in entries:
        if d.present(root):
            done[d.name] = f"already here: {root / d.folder}"
            log(f"{d.name}: {done[d.name]}")
            continue
        if d.fetch is None:
            failed[d.name] = f"not downloadable ({d.note})"
            log(f"{d.name}: {failed[d.name]}")
            continue
        log(f"{d.name}: {d.title}, {d.size}, from {d.source} ...")
        try:
            wrote = d.fetch(root, progress)
        except KeyboardInterrupt:
            log(f"{d.name}: interrupted; what arrived is kept, the same command resumes it")
            raise
        except Exception as e:  # noqa: BLE001 -- reported with the others below
            failed[d.name] = f"{type(e).__name__}: {e}"
            log(f"{d.name}: FAILED: {failed[d.name]}")
            continue
        paths = wrote if isinstance(wrote, list) else [wrote]
        done[d.name] = f"-> {root / d.folder}" + "".join(f"\n    {p}" for p in paths)
        log(f"{d.name}: {done[d.name]}")
    if failed:
        raise RuntimeError("could not fetch " + "; ".join(f"{k}: {v}" for k, v in failed.items()))
    return done


def unavailable(*names: str, root=None) -> str:
    """'' if every data set of `names` is under the data root, else why not and how to get each (a test's
    skip reason): the make command, or for the shared-only subsets where they come from."""
    root = files.data_root(root)
    gone = [get(n) for n in names if not _present(n, root)]
    parts = [f"{d.title} ({d.name}), not under {root}; to get it: "
             + (f"`{files.fetch_command(d.name)}`" if d.fetch else f"it is {d.note}, or point ROMAE_DATA at the project's "
                "shared data folder") for d in gone]
    return "needs " + "; and ".join(parts) if parts else ""


def status(names=(), root=None) -> list[dict]:
    """One row per data set (`names`, default ALL): name, title, size, here (bool), folder, fetchable, and
    note (for a UEA set: Table 6 or not, how its files are checked, what is wrong with them; else the entry's
    note). `found` lists what else is under the data root."""
    root = files.data_root(root)
    return [_row(d, root) for d in expand(names)]


def _row(d: Dataset, root: Path, note: str | None = None) -> dict:
    if note is None:
        note = _uea_note(d.name[4:], root) if d.name.startswith("uea:") else d.note
    return dict(name=d.name, here=bool(d.present(root)), size=d.size, folder=str(root / d.folder), title=d.title,
                fetchable=d.fetch is not None, note=note)


_CHECKS = {"known": "known checksum",
           "recorded": "checksum recorded in SHA256SUMS (trust on first use)",
           "partly recorded": "checksum recorded for one file only"}


def _uea_note(name: str, root: Path) -> str:
    """What `status` says of UEA data set `name`: Table 6's or not; then, if its folder holds anything, how its
    files are checked (known, recorded, or no checksum known) or what is wrong with them."""
    folder, expected = root / "uea" / name, uea._split_files(name)
    which = "Table 6" if name in uea.TABLE6 else "UEA data set, not one of Table 6's"
    if not folder.is_dir():
        return which
    gone = [b for b in expected if not (folder / b).is_file()]
    aside = [b for b in gone if Path(f"{folder / b}.corrupt").is_file()]
    if aside:
        return f"{which}; {', '.join(aside)} failed its checksum and was moved aside (.corrupt)"
    if len(gone) == len(expected):
        others = sorted(p.name for p in folder.glob("*.ts"))
        if not others:
            return which
        return (f"{which}; holds {', '.join(others[:4])}{' ...' if len(others) > 4 else ''} but not "
                f"{' and '.join(expected)}, the files `uea.load` reads")
    if gone:
        return f"{which}; incomplete: {', '.join(gone)} is not there"
    state = uea.checksum_state(name, root)
    if not uea.present(name, root):
        return f"{which}; a file fails its {_CHECKS.get(state, 'checksum')}"
    if state == "none":
        return (f"{which}; found, no checksum known, so any bytes count (to record one: "
                f"`sha256sum {' '.join(expected)} > SHA256SUMS` in its folder)")
    return f"{which}; {_CHECKS[state]}"


def _known_tops() -> set[str]:
    """The top-level folders under the data root that catalog entries use."""
    entries = [*FIXED.values(), _uea("Name"), _librispeech("train-clean-100")]
    return {Path(d.folder).parts[0] for d in entries}


def found(root=None, skip: Iterable[str] = ()) -> list[dict]:
    """What else is under the data root, beyond the rows of `skip` (names), in `status`'s rows: every catalog
    entry found there (the shared-only subsets, other LibriSpeech splits), every folder <root>/uea/<Name>/ that
    holds .ts files (a UEA data set of one's own included: its note says whether a checksum is known), and every
    other folder the catalog does not know (title "unknown folder"; a uea/ subfolder without .ts files, too)."""
    root = files.data_root(root)
    if not root.is_dir():
        return []
    skip, rows = set(skip), []

    def unknown(folder: Path, note: str) -> dict:
        return dict(name=f"{folder.relative_to(root)}/", here=False, size="", folder=str(folder),
                    title="unknown folder", fetchable=False, note=note)

    for d in FIXED.values():
        if d.name not in skip and d.present(root):
            rows.append(_row(d, root))
    subfolders = lambda path: sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))  # noqa: E731
    if (root / "uea").is_dir():
        for folder in subfolders(root / "uea"):
            if not any(folder.glob("*.ts")) and not any(folder.glob("*.ts.corrupt")):
                rows.append(unknown(folder, "no .ts files (a UEA data set is <Name>/<Name>_TRAIN.ts and "
                                            "<Name>_TEST.ts)"))
                continue
            try:
                d = _uea(folder.name)
            except ValueError:
                rows.append(unknown(folder, "holds .ts files, but its name is not a UEA data set name "
                                            "(letters, digits, _ . - only)"))
                continue
            if d.name not in skip:
                rows.append(_row(d, root))
    splits = root / "librispeech" / "LibriSpeech"
    if splits.is_dir():
        for folder in subfolders(splits):
            if folder.name not in librispeech.SPLITS:
                rows.append(unknown(folder, f"not a LibriSpeech split ({', '.join(librispeech.SPLITS)})"))
            elif f"librispeech:{folder.name}" not in skip:
                rows.append(_row(_librispeech(folder.name), root))
    tops = _known_tops()
    for folder in subfolders(root):
        if folder.name not in tops:
            rows.append(unknown(folder, "not a folder the catalog knows (no data set of the notebooks lives here)"))
    return rows
