"""ELAsTiCC light curves (the DESC challenge the paper's Table 4 uses), read from SNANA FITS HEAD/PHOT.

ELAsTiCC's training sample is one folder per simulation model, `ELASTICC_TRAIN_<model>/`, each with
pairs `..._HEAD.FITS.gz` (one row per object) and `..._PHOT.FITS.gz` (one row per observation). Object
i's observations are PHOT rows PTROBS_MIN[i]..PTROBS_MAX[i], counted from 1 and inclusive; a separator
row (MJD = -777, band "-") ends every light curve and is dropped. Tables are read with astropy.io.fits.

    obs, meta = read_snana(head_file)        # obs: object_id, mjd, band, flux, flux_err, photflag
    store = convert(root)                    # every HEAD/PHOT pair under <root>/elasticc -> a TokenStore
    parts = partitions(meta.object_id, meta.label)   # ATAT's test set and 5 folds

Preprocessing and split follow ATAT (`alercebroker/ATAT` at 9544991, which the paper says it used):
- the class is the model folder's name mapped by ATAT's `fine_class_grouping_e1` (`TAXONOMY`, verbatim
  from its `src/data/get_partitions.py`) onto 20 classes, in ATAT's label order (`CLASSES`, its
  `dict_classes.json`); outside an `ELASTICC_TRAIN_<model>` folder the model is read from the HEAD
  header's VERSION (`..._MODEL90_SNIa-SALT2_...`), or passed as `model=`;
- every observation is kept (non-detections, saturated points); each band is thinned evenly to at most
  65 points (`MAX_PER_BAND`, ATAT's `pad_list`) before any other cut; time in days since the first kept
  observation; flux (FLUXCAL) and its error (FLUXCALERR) raw: neither ATAT nor the authors scale them;
- the optional alert mask (`alert_mask`, ATAT's `mask_alert`) keeps points from 30 days before the
  triggering detection (PHOTFLAG 6144) to the last detection, without saturated ones (flag 1024);
  the authors' later 0.7205 / 0.6649 rows use it, the paper's 0.8029 / 0.7106 do not;
- partitions: 1,000 objects per class as the common test set (`groupby(label).sample(1000,
  random_state=0)`), then `StratifiedKFold(5, shuffle=True, random_state=0)` over the rest. ATAT's
  own order of objects is not reproducible (multiprocessing), so use its published
  `partitions.parquet` (`read_partitions`) to get its exact split.

Files live under `<root>/elasticc/` (root = $ROMAE_DATA): the full training sample as extracted from
the official tarball (`FULL_ELASTICC_TRAIN/ELASTICC_TRAIN_<model>/...`), or any folder of HEAD/PHOT
pairs. Files listed in `KNOWN_SHA256` (the shared sample) or in a folder's SHA256SUMS are verified (one that
differs is moved aside to `<file>.corrupt` with an error naming it; `sample_present` does not count it);
`download()` fetches the tarball (tens of GB; no published checksum: trusted on first use and written to
SHA256SUMS). Conversion writes one store shard per file pair, so an interrupted one resumes.
"""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from . import files

URL = "https://portal.nersc.gov/cfs/lsst/DESC_TD_PUBLIC/ELASTICC_TRAINING_SAMPLES/FULL_ELASTICC_TRAIN.tar"
HOME = "https://portal.nersc.gov/cfs/lsst/DESC_TD_PUBLIC/ELASTICC/"
ATAT = "https://github.com/alercebroker/ATAT"
BANDS = ("u", "g", "r", "i", "z", "Y")
MAX_PER_BAND = 65  # ATAT's MAX_EPOCHS
SEPARATOR_MJD = -777.0
TRIGGER, DETECTED, SATURATED = 6144, 4096, 1024  # PHOTFLAG values / bits

# ATAT's fine_class_grouping_e1 (src/data/get_partitions.py at 9544991), verbatim: model folder -> class
TAXONOMY = {
    "AGN": "AGN", "CART": "CART", "Cepheid": "Cepheid", "d-Sct": "Delta Scuti", "dwarf-nova": "Dwarf Novae",
    "EB": "EB", "ILOT": "ILOT", "KN_B19": "KN", "KN_K17": "KN", "Mdwarf-flare": "M-dwarf Flare", "PISN": "PISN",
    "RRL": "RR Lyrae", "SLSN-I+host": "SLSN", "SLSN-I_no_host": "SLSN", "SNIa-91bg": "91bg", "SNIa-SALT2": "Ia",
    "SNIax": "Iax", "SNIb+HostXT_V19": "Ib/c", "SNIb-Templates": "Ib/c", "SNIc+HostXT_V19": "Ib/c",
    "SNIc-Templates": "Ib/c", "SNIcBL+HostXT_V19": "Ib/c", "SNII+HostXT_V19": "II", "SNII-NMF": "II",
    "SNII-Templates": "II", "SNIIb+HostXT_V19": "SN-like/Other", "SNIIn+HostXT_V19": "II", "SNIIn-MOSFIT": "II",
    "TDE": "TDE", "uLens-Binary": "uLens", "uLens-Single-GenLens": "uLens", "uLens-Single_PyLIMA": "uLens",
}
# ATAT's label order (its final_dataset/dict_classes.json)
CLASSES = ("AGN", "CART", "Cepheid", "Delta Scuti", "Dwarf Novae", "EB", "ILOT", "KN", "M-dwarf Flare", "PISN",
           "RR Lyrae", "SLSN", "91bg", "Ia", "Iax", "Ib/c", "II", "SN-like/Other", "TDE", "uLens")

SAMPLE = "snana_fits_sample"
# the sample's public home: LSSTDESC/plasticc_alerts at the commit the shared data folder's MANIFEST names
SAMPLE_URL = ("https://raw.githubusercontent.com/LSSTDESC/plasticc_alerts/361984cde5ceb4e747a780fbe4f936fb72e600a8/"
              "hostSims/MLAG_HOSTLIB_ALLCLASS_NONIaMODEL0/{name}")
KNOWN_SHA256 = {  # the shared data folder's sample (its MANIFEST)
    f"{SAMPLE}/MLAG_HOSTLIB_ALLCLASS_NONIaMODEL0-0010_HEAD.FITS.gz":
        "55a2f4c528bead5d0600ad6018835e241ee65cd2c60f70c6ed32a89c57fd241b",
    f"{SAMPLE}/MLAG_HOSTLIB_ALLCLASS_NONIaMODEL0-0010_PHOT.FITS.gz":
        "0f4a01578897b9454cba69d8d624b4e3fb0781eafcc86effbc86c06185afdfa2",
}


def _model_from(head: Path, header) -> str | None:
    """The simulation model of a HEAD file: its `ELASTICC_TRAIN_<model>` folder, else the header's VERSION."""
    for part in reversed(head.parts[:-1]):
        if part.startswith("ELASTICC_TRAIN_"):
            return part[len("ELASTICC_TRAIN_"):]
    version = str(header.get("VERSION", ""))
    found = [m for m in TAXONOMY if re.search(rf"MODEL\d+_{re.escape(m)}(_|$)", version)]
    return max(found, key=len) if found else None


def phot_file(head: str | Path) -> Path:
    """The PHOT file of a HEAD file (same name, HEAD -> PHOT)."""
    head = Path(head)
    if "_HEAD.FITS" not in head.name:
        raise ValueError(f"{head.name} is not a SNANA HEAD file (expected a name with _HEAD.FITS)")
    return head.with_name(head.name.replace("_HEAD.FITS", "_PHOT.FITS"))


def _text(col) -> np.ndarray:
    return np.char.strip(np.asarray(col).astype(str))


def read_snana(head: str | Path, model: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A SNANA HEAD/PHOT pair -> (obs, meta).

    obs: one row per observation: object_id (SNID), mjd, band (u g r i z Y), flux (FLUXCAL), flux_err
    (FLUXCALERR), photflag; separator rows dropped. meta: one row per object: object_id, sntype, model,
    label (ATAT's class), n_obs. `model`: the simulation model if neither the folder nor the header
    names it. Errors name the file and the object.
    """
    from astropy.io import fits  # the field's FITS reader; imported here so the package loads without it

    head = Path(head)
    phot = phot_file(head)
    for f in (head, phot):
        if not f.is_file():
            raise FileNotFoundError(f"{f} not found (a SNANA light-curve file needs its HEAD and PHOT twins)")
    with fits.open(head, memmap=False) as hh, fits.open(phot, memmap=False) as ph:
        if len(hh) < 2 or len(ph) < 2:
            raise ValueError(f"{head.name} / {phot.name}: no table in HDU 1")
        h, p = hh[1].data, ph[1].data
        need_h = {"SNID", "SNTYPE", "PTROBS_MIN", "PTROBS_MAX"}
        need_p = {"MJD", "BAND", "FLUXCAL", "FLUXCALERR", "PHOTFLAG"}
        for name, table, need in ((head.name, h, need_h), (phot.name, p, need_p)):
            missing = sorted(need - set(table.columns.names))
            if missing:
                raise ValueError(f"{name}: columns {missing} are missing (has {table.columns.names[:12]} ...)")
        model = model or _model_from(head, hh[0].header) or _model_from(head, hh[1].header)
        snid, sntype = _text(h["SNID"]), np.asarray(h["SNTYPE"]).astype(np.int64)
        lo, hi = np.asarray(h["PTROBS_MIN"]).astype(np.int64), np.asarray(h["PTROBS_MAX"]).astype(np.int64)
        cols = dict(mjd=np.asarray(p["MJD"], np.float64), band=_text(p["BAND"]),
                    flux=np.asarray(p["FLUXCAL"], np.float32), flux_err=np.asarray(p["FLUXCALERR"], np.float32),
                    photflag=np.asarray(p["PHOTFLAG"]).astype(np.int32))
    if model is None:
        raise ValueError(f"{head}: cannot tell the simulation model (no ELASTICC_TRAIN_<model> folder, no "
                         f"MODELnn_<model> in the header's VERSION); pass model= (one of {sorted(TAXONOMY)})")
    if model not in TAXONOMY:
        raise ValueError(f"{head}: model {model!r} is not in ATAT's taxonomy ({sorted(TAXONOMY)})")
    n_rows = len(cols["mjd"])
    bad = (lo < 1) | (hi < lo) | (hi > n_rows)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{head.name}: object {snid[i]} points at PHOT rows {lo[i]}..{hi[i]}, but {phot.name} "
                         f"has {n_rows} rows")
    counts = hi - lo + 1
    rows = np.concatenate([np.arange(a - 1, b) for a, b in zip(lo, hi)])  # 1-based inclusive -> 0-based
    obs = pd.DataFrame({"object_id": np.repeat(snid, counts), **{k: v[rows] for k, v in cols.items()}})
    obs = obs[(obs.mjd != SEPARATOR_MJD) & (obs.band != "-")]
    unknown = sorted(set(obs.band.unique()) - set(BANDS))
    if unknown:
        raise ValueError(f"{phot.name}: bands {unknown} are not LSST's {BANDS}")
    n_obs = obs.groupby("object_id", sort=False).size().reindex(snid, fill_value=0).to_numpy()
    meta = pd.DataFrame(dict(object_id=snid, sntype=sntype, model=model, label=TAXONOMY[model], n_obs=n_obs))
    return obs.reset_index(drop=True), meta


def alert_mask(flag: np.ndarray, time: np.ndarray) -> np.ndarray:
    """ATAT's `mask_alert`: keep points from 30 days before the trigger (PHOTFLAG 6144) to the last point
    flagged other than 0 and 1024, minus saturated points (1024). Without a 6144 point (other simulations,
    the stand-in) the first detection (bit 4096) is the trigger; without a detection, every unsaturated point."""
    flag, time = np.asarray(flag), np.asarray(time)
    keep = flag != SATURATED
    trig = time[flag == TRIGGER]
    if not len(trig):
        trig = time[(flag & DETECTED) > 0]
    flagged = time[(flag != 0) & (flag != SATURATED)]
    if len(trig):
        keep &= time >= trig.min() - 30.0
    if len(flagged):
        keep &= time <= flagged.max()
    return keep


def find(root=None) -> list[Path]:
    """Every SNANA HEAD file with its PHOT twin under <root>/elasticc, sorted (the full sample if extracted
    there, else the shared sample)."""
    base = files.data_root(root) / "elasticc"
    heads = sorted(p for p in base.rglob("*_HEAD.FITS*") if p.suffix != ".corrupt" and phot_file(p).is_file()) \
        if base.is_dir() else []  # files moved aside (`files.quarantine`) are not light curves
    full = [p for p in heads if any(part.startswith("ELASTICC_TRAIN_") for part in p.parts)]
    return full or heads


def missing_message(root=None) -> str:
    where = files.data_root(root) / "elasticc"
    return (f"no ELAsTiCC light curves under {where}. Get the training sample (tens of GB) from {URL}: "
            f"`{files.fetch_command('elasticc')}` (or romae.data.elasticc.download(root)) downloads and extracts "
            f"it there; or copy any SNANA *_HEAD.FITS.gz / *_PHOT.FITS.gz pairs into that folder")


def check_classes(meta: pd.DataFrame, root=None) -> None:
    """Refuse light curves that cannot train a classifier, i.e. fewer than two of ATAT's classes (the
    200-object SNANA sample is SN Ia only; so is one ELASTICC_TRAIN_<model> folder): DataMissing naming
    what was found, where, and how to get ELAsTiCC's training sample. meta: `convert`'s."""
    counts = meta.label.value_counts()
    if len(counts) >= 2:
        return
    base = files.data_root(root) / "elasticc"
    folders = sorted({h.parent.relative_to(base).as_posix() for h in find(root)})
    where = f"{base} ({', '.join(folders[:3])}{' ...' if len(folders) > 3 else ''})" if folders else str(base)
    raise files.DataMissing(
        f"ELAsTiCC classification needs the training sample with its classes ({len(CLASSES)} in ATAT's taxonomy, "
        f"one ELASTICC_TRAIN_<model> folder per simulation model); found {len(meta)} objects of {len(counts)} "
        f"class{'es' if len(counts) != 1 else ''} ({counts.to_dict() or 'none'}) under {where}. Get the training "
        f"sample: `{files.fetch_command('elasticc')}` (romae.data.elasticc.download: {URL}, tens of GB)", ("elasticc",))


def verify(head: Path, root=None) -> None:
    """Check a HEAD/PHOT pair against KNOWN_SHA256 (which wins) or its folder's SHA256SUMS (files listed in
    neither pass); a file that differs is moved aside and a ChecksumMismatch names it and the fetch command."""
    base = files.data_root(root) / "elasticc"
    for f in (head, phot_file(head)):
        rel = f.relative_to(base).as_posix() if f.is_relative_to(base) else f.name
        if rel in KNOWN_SHA256:
            files.check_sha256(f, KNOWN_SHA256[rel], "elasticc-sample")
        else:
            files.verify_folder(f.parent, [f.name], "elasticc")


def convert(root=None, out: str | Path | None = None, progress: bool = True, limit: int | None = None):
    """Every HEAD/PHOT pair under <root>/elasticc -> a `romae.store` folder (one shard per pair; finished
    shards are kept, so a re-run resumes) -> (store folder, meta of every object).

    out: the store folder (default: <repo>/.cache/romae/stores/elasticc-<hash of the files' names>).
    limit: at most this many file pairs (a quick look at a big sample).
    """
    from .. import store

    heads = find(root)[:limit]
    if not heads:
        raise files.DataMissing(missing_message(root), ("elasticc",))
    base = files.data_root(root) / "elasticc"
    files.check_quarantined(base, "**/*.FITS*", "elasticc")  # a file moved aside: stop, not convert fewer
    rel = [h.relative_to(base).as_posix() for h in heads]
    out = Path(out) if out is not None else files.CACHE / "stores" / f"elasticc-{files.config_hash(rel)}"
    metas = []
    for head, name in tqdm(list(zip(heads, rel)), desc="ELAsTiCC FITS -> store", disable=not progress):
        shard = re.sub(r"[^A-Za-z0-9_.+-]", "_", name.replace("_HEAD.FITS.gz", "").replace("_HEAD.FITS", ""))
        meta_file = out / f"{shard}.meta.csv"
        with store.build_lock(out / shard):  # several processes: one converts a file, the others wait for it
            if not (store.has_shard(out, shard) and meta_file.is_file()):
                verify(head, root)
                obs, meta = read_snana(head)
                store.write_shard(out, shard, obs, id="object_id", time="mjd", variable="band",
                                  value=["flux", "flux_err"], flag="photflag", labels=meta.set_index("object_id").label,
                                  variables=BANDS, classes=CLASSES, source=dict(head=name, sha256=files.sha256(head)))
                files.write_atomic(meta_file, meta.to_csv(index=False))
            metas.append(pd.read_csv(meta_file, dtype={"object_id": str}))
    return out, pd.concat(metas, ignore_index=True)


def partitions(ids, labels, test_per_class: int = 1000, n_folds: int = 5, seed: int = 0) -> pd.DataFrame:
    """ATAT's `get_partitions.py`: a common test set of `test_per_class` objects per class (all of a
    smaller class), then stratified k folds of the rest -> rows (object_id, label, partition) with
    partition 'test', 'training_k', 'validation_k' (every non-test object once per fold)."""
    from sklearn.model_selection import StratifiedKFold

    df = pd.DataFrame(dict(object_id=list(ids), label=list(labels)))
    if df.object_id.duplicated().any():
        raise ValueError(f"object ids must be unique; {df.object_id[df.object_id.duplicated()].iloc[0]!r} repeats")
    counts = df.label.value_counts()
    if (counts >= test_per_class).all():  # ATAT's call
        test = df.groupby("label").sample(n=test_per_class, random_state=seed)
    else:  # a small sample: every object of a class smaller than test_per_class would be test data
        test = pd.concat([g.sample(n=min(len(g), test_per_class), random_state=seed) for _, g in df.groupby("label")])
    rest = df[~df.object_id.isin(test.object_id)].reset_index(drop=True)
    left = rest.label.value_counts()
    if left.empty or left.max() < n_folds:  # StratifiedKFold would fail with an opaque message
        raise ValueError(f"ATAT's partitions need a class with at least {n_folds} objects outside the test set "
                         f"({test_per_class} per class) for {n_folds} folds; of {len(df)} objects "
                         f"({counts.to_dict()}), {left.to_dict() or 'none'} are left")
    out = [test.assign(partition="test")]
    kf = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    for k, (tr, va) in enumerate(kf.split(np.zeros(len(rest)), rest.label)):
        out += [rest.iloc[tr].assign(partition=f"training_{k}"), rest.iloc[va].assign(partition=f"validation_{k}")]
    return pd.concat(out, ignore_index=True)


def read_partitions(path: str | Path) -> pd.DataFrame:
    """ATAT's published `partitions.parquet` (columns SNID, label, partition) -> (object_id, label, partition)."""
    try:
        df = pd.read_parquet(path)
    except ImportError as e:
        raise ImportError(f"reading {path} needs a parquet engine: pip install pyarrow") from e
    missing = {"SNID", "label", "partition"} - set(df.columns)
    if missing:
        raise ValueError(f"{path}: columns {sorted(missing)} are missing (ATAT's file has SNID, label, partition)")
    return df.rename(columns={"SNID": "object_id"}).assign(object_id=lambda d: d.object_id.astype(str))


def fold(parts: pd.DataFrame, k: int = 0) -> dict[str, list]:
    """The object ids of fold k: {'train', 'validation', 'test'} (the authors used fold 0 only)."""
    names = {"train": f"training_{k}", "validation": f"validation_{k}", "test": "test"}
    if names["train"] not in set(parts.partition):
        raise ValueError(f"fold {k} is not in the partitions (have {sorted(set(parts.partition))})")
    return {key: parts.object_id[parts.partition == p].tolist() for key, p in names.items()}


FULL = "FULL_ELASTICC_TRAIN"
_COMPLETE = ".extracted"  # written in FULL once the tarball is unpacked whole


def present(root=None) -> bool:
    """Whether the ELAsTiCC training sample is extracted under <root>/elasticc (its ELASTICC_TRAIN_<model>
    folders; not the 200-object SNANA sample, which is one class)."""
    base = files.data_root(root) / "elasticc"
    if (base / FULL / _COMPLETE).is_file():
        return True
    if (base / Path(URL).name).is_file():  # a tarball here: the extraction did not finish
        return False
    return base.is_dir() and any(p.is_dir() and p.name.startswith("ELASTICC_TRAIN_") and any(p.glob("*_HEAD.FITS*"))
                                 for p in base.rglob("ELASTICC_TRAIN_*"))


def download(root=None, progress: bool = True) -> Path:
    """Fetch the official training tarball into <root>/elasticc and extract it (needs internet and tens
    of GB). HEAD/PHOT files are then found by `find`. The tarball has no published checksum: its SHA-256
    is recorded (trust on first use). A download cut short resumes; the tarball is removed once extracted."""
    base = files.data_root(root) / "elasticc"
    tar, out = base / Path(URL).name, base / FULL
    if present(root) and not tar.is_file():
        return out
    if tar.is_file():  # one already here: checked against SHA256SUMS, if it lists it (moved aside if it differs)
        files.verify_folder(base, [tar.name], "elasticc")

    def unpack(tar: Path) -> None:
        with tarfile.open(tar) as t:
            t.extractall(out, filter="data")
        (out / _COMPLETE).write_text(f"extracted from {URL}\n")

    files.fetch_archive(URL, tar, unpack, what="tar", progress=progress)  # no published checksum: recorded
    return out


def sample_present(root=None) -> bool:
    """Whether the SNANA sample is under <root>/elasticc/ and matches its known SHA-256 (`files.intact`)."""
    base = files.data_root(root) / "elasticc"
    return all(files.intact(base / rel, digest) for rel, digest in KNOWN_SHA256.items())


def download_sample(root=None, progress: bool = True) -> list[Path]:
    """Fetch the 200-object SNANA sample (ELAsTiCC's FITS format, one class; 3.8 MB) into
    <root>/elasticc/snana_fits_sample/, each file checked against its known SHA-256 whatever a mirror serves;
    a copy there that differs is moved aside (`<name>.corrupt`, with a warning) and fetched afresh."""
    base = files.data_root(root) / "elasticc"
    out = []
    for rel, digest in KNOWN_SHA256.items():
        path = base / rel
        if not files.intact(path, digest):
            files.set_aside(path, digest, names="elasticc-sample")
            files.download_url(SAMPLE_URL.format(name=Path(rel).name), path, sha256=digest, progress=progress)
        files.check_sha256(path, digest, "elasticc-sample")
        out.append(path)
    return out


def generate(n_per_class: int = 6, seed: int = 0, days: float = 1095.0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Random light curves of the training sample's shape, in `read_snana`'s form (obs: object_id, mjd, band,
    flux, flux_err, photflag; meta: object_id, label, n_obs): a dry run's stand-in where ELAsTiCC is absent
    (`romae.runtime`), not data.

    `n_per_class` objects of each of ATAT's 20 `CLASSES`; visits at random times over `days` in random bands;
    every third object (the first included) has 80 points per band, more than ATAT's cap (`MAX_PER_BAND`: 390
    tokens after thinning), the others 10-200 in all. Flux: a class-dependent periodic signal plus noise in
    FLUXCAL-like units; PHOTFLAG marks detections (|flux| / error > 5) and the brightest point as the trigger."""
    if n_per_class < 1:
        raise ValueError(f"n_per_class must be >= 1, got {n_per_class}")
    rng = np.random.default_rng(seed)
    labels = np.tile(np.arange(len(CLASSES)), n_per_class)
    obs, meta = [], []
    for oid, k in enumerate(labels):
        n = MAX_PER_BAND * len(BANDS) + 15 * len(BANDS) if oid % 3 == 0 else int(rng.integers(10, 201))
        band = np.arange(n) % len(BANDS) if oid % 3 == 0 else rng.integers(0, len(BANDS), n)
        t = np.sort(rng.uniform(0.0, days, n))
        err = rng.lognormal(1.0, 0.3, n)
        flux = 50.0 * (1 + k % 4) * np.sin(2 * np.pi * t / (5.0 + 10.0 * k)) + err * rng.standard_normal(n)
        flag = np.where(np.abs(flux) / err > 5, DETECTED, 0)
        flag[np.argmax(flux)] = TRIGGER
        obs.append(pd.DataFrame(dict(object_id=oid, mjd=60000.0 + t, band=np.asarray(BANDS)[band],
                                     flux=flux.astype(np.float32), flux_err=err.astype(np.float32),
                                     photflag=flag.astype(np.int32))))
        meta.append(dict(object_id=oid, label=CLASSES[k], n_obs=n))
    return pd.concat(obs, ignore_index=True), pd.DataFrame(meta)


__all__ = ["BANDS", "CLASSES", "TAXONOMY", "alert_mask", "check_classes", "convert", "download", "download_sample",
           "find", "fold", "generate", "partitions", "present", "read_partitions", "read_snana", "sample_present"]
