"""Each dataset's series: found, 30 % of their steps dropped, thinned, subset and built into tokens."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ... import builders, runtime
from ...builders import from_sequences
from ...data import files, uea

from .profiles import DROP_SEED, PAPER_STATS, UEARun


def find(datasets, root=None) -> tuple[list[str], list[str], str]:
    """-> (found, missing, message): which datasets are under <data>/uea/, and how to get the others."""
    base = files.data_root(root)
    have = set(uea.available(base))
    found = [d for d in datasets if d in have]
    missing = [d for d in datasets if d not in have]
    msg = ""
    if missing:
        msg = (f"not under {base / 'uea'}: {', '.join(missing)}. Get them with "
               f"`{files.fetch_command(f'uea:{d}' for d in missing)}` (needs internet; from "
               f"{uea.URL.format(name='<Name>')}) or put <Name>_TRAIN.ts and <Name>_TEST.ts in "
               f"{base / 'uea' / '<Name>'}/")
    return found, missing, msg


def drop_steps(series: list[np.ndarray], rate: float, seed: int = DROP_SEED) -> list[np.ndarray]:
    """Copies of series [T_i, C] with floor(rate * T_i) random steps set to NaN (one generator, in order):
    `romae.builders.drop_steps` with the experiment's seed.

    The removed steps become all-NaN rows, which `from_sequences` drops while the kept steps keep their
    true time index (the authors' pandas version of this removed nothing under copy-on-write)."""
    return builders.drop_steps(series, rate, seed)


def thin(series: list[np.ndarray], max_tokens: int | None) -> list[np.ndarray]:
    """Series whose observed steps (not all-NaN) exceed `max_tokens` keep `max_tokens` of them, evenly spread
    from the first to the last (the others become NaN rows: dropped, the kept ones keep their times)."""
    if max_tokens is None:
        return series
    out = []
    for x in series:
        seen = np.flatnonzero(~np.isnan(x).all(1))
        if len(seen) > max_tokens:
            x = x.copy()
            keep = seen[np.unique(np.round(np.linspace(0, len(seen) - 1, max_tokens)).astype(int))]
            x[np.setdiff1d(seen, keep)] = np.nan
        out.append(x)
    return out


def _subset(split: uea.TSData, cfg: UEARun, seed: int) -> tuple[list, list | None, np.ndarray]:
    """(series, times, labels) of a split, reduced for the smoke profile."""
    n = len(split.series)
    idx = np.arange(n)
    if cfg.max_series is not None and n > cfg.max_series:
        idx = np.sort(np.random.default_rng(seed).choice(n, cfg.max_series, replace=False))
    series = [split.series[i][: cfg.max_length] for i in idx]
    times = None if split.times is None else [split.times[i][: cfg.max_length] for i in idx]
    return series, times, split.labels[idx]


def _classification(raw: dict, name: str) -> None:
    if raw["train"].labels is None or not raw["classes"]:
        raise ValueError(f"{name} has no class labels (a regression or unlabelled dataset): Table 6 is classification")


def build(name: str, cfg: UEARun, root=None, raw: dict | None = None) -> dict:
    """Load a dataset, drop 30 % of every series' steps (train and test alike), thin very long series if the
    plan says so -> token datasets."""
    raw = uea.load(name, root) if raw is None else raw
    _classification(raw, name)
    out = {}
    for split, seed in (("train", 1), ("test", 2)):
        series, times, labels = _subset(raw[split], cfg, seed)
        # one generator per split, seeded from DROP_SEED: the same drop every run, independent of the model seed
        dropped = thin(drop_steps(series, cfg.drop, DROP_SEED + seed), cfg.max_tokens)
        like = out.get("train")
        out[split] = from_sequences(dropped, times=times, labels=labels, like=like, standardize=cfg.standardize,
                                    classes=raw["classes"] if like is None else None)
        out[f"{split}_raw"] = (series, dropped)
    generated = raw.get("generated", False)  # a dry run's series (`dry_raw`): no files
    out["sha256"] = None if generated else [files.sha256(Path(raw["folder"]) / f"{name}_{s}.ts")
                                            for s in ("TRAIN", "TEST")]
    out["classes"], out["generated"] = raw["classes"], generated
    return out


def dry_raw(name: str, cfg: UEARun) -> dict:
    """A dry run without `name`'s files: generated series of its Table 6 shape (`PAPER_STATS`: channels, classes,
    lengths before the drop), at most `runtime.dry_count` per split, in `uea.load`'s form; labelled
    `runtime.DRY_LABEL` wherever they are reported. Not data."""
    st = PAPER_STATS[name]
    # the archive's length whose kept steps after the drop are the table's: T - floor(drop * T) = kept
    before = lambda kept: next(t for t in range(kept, 2 * kept + 2) if t - int(t * cfg.drop) == kept)  # noqa: E731
    return uea.generate(name, runtime.dry_count(st["n_train"]), runtime.dry_count(st["n_test"]), st["channels"],
                        st["classes"], (before(st["min_len"]), before(st["max_len"])))


# ----------------------------------------------------------------------------- planning

def stats(raw: dict, cfg: UEARun) -> dict:
    """Sizes a plan needs: series per split, channels, classes, and the longest series after the drop."""
    tr, _, _ = _subset(raw["train"], cfg, 1)
    te, _, _ = _subset(raw["test"], cfg, 2)
    kept = [len(x) - int(len(x) * cfg.drop) for x in tr + te]
    return dict(n_train=len(tr), n_test=len(te), channels=raw["train"].n_channels, classes=len(raw["classes"]),
                max_len=max(kept), min_len=min(kept))


def labelled_index(train, k: int, seed: int) -> np.ndarray:
    """The indices (sorted) of k training series per class (all of a class with fewer), drawn with `seed`."""
    rng = np.random.default_rng(seed)
    labels = train.tensors["labels"].numpy()
    return np.sort(np.concatenate([rng.permutation(np.flatnonzero(labels == c))[:k] for c in np.unique(labels)]))


def labelled_subset(train, k: int, seed: int):
    """k training series per class (all of a class with fewer), drawn with `seed`: the labelled data of
    the label-scarce variants."""
    return train.subset(labelled_index(train, k, seed))
