"""ELAsTiCC light-curve classification (Sec. 5.4, Table 4), and its offline stand-in.

One token per observation: (flux, flux error), the paper's "patch size (1, 2)"; 2-D positions (days
since the first kept observation, band index 0-5); padding with the pad mask. Light curves stream from
an on-disk `romae.store` (built once from the SNANA FITS files, or from the stand-in generator) through
the shared recipe `romae.recipe.pretrain_finetune`: MAE pre-training (Table 18: 200 epochs, mask 75 %,
AdamW (0.9, 0.95), wd 0.05, lr 6.4e-3, batch 16,384, clip 10, warm-up 2,000), then fine-tuning (25
epochs, AdamW (0.9, 0.999), wd 0.05, lr 8e-4, batch 4,096, dropout and drop-path 0.2, clip 10,
warm-up 2,000), macro-F1 on ATAT's test set (fold 0, as the authors), and the same classifier from
scratch as the control for the paper's claim that pre-training is what beats ATAT.

Data:
- `paper`: the ELAsTiCC training sample under <data>/elasticc (see `romae.data.elasticc`), ATAT's
  preprocessing and partitions (its published `partitions.parquet` if present in
  <data>/elasticc/data_partition_paper/, else re-drawn with ATAT's code, which does not reproduce its
  exact split). Nothing runs without the data: the run says what is missing.
- `quick` / `smoke`: the offline stand-in (`romae.data.lightcurves`), labelled "stand-in, not ELAsTiCC"
  in every row, table and figure; split with the same `partitions` code.

Switches (defaults = the paper's text): `mask_ratio` 0.75 (the authors' code trained with 0.5),
`class_weighted` (the authors' code weighted the cross-entropy; here inverse training frequency),
`alert_mask` (the authors' later 0.7205 / 0.6649 rows), `flux_transform` (raw = the authors; "asinh").
Deviations of every profile (notebook 13's first cell; each row's note): `length_buckets=8`, batches of
similar length for cost (0 = the paper's uniform batches); drop-path as the authors' code, lambda*l/(N-1),
not App. A.2's lambda*m/N.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import time
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from ..compendium import report
from .. import runtime, store
from ..storage import CACHE
from ..config import RoMAEConfig, TrainConfig, check_profile, size
from ..data import elasticc, files, lightcurves
from ..data.catalog import Need, require
from ..compendium.kept import pretrain_finetune_kept
from ..recipe import DROP_PATH_RULE, plot_learning_curves as plot_histories
from ..model import prediction_config
from ..compendium.plan import Training
from ..compendium.reference import peer_values
from ..compendium.report import difference, difference_text, loss_flags, record, save_table, scale

EXPERIMENT = "table4_elasticc"
STAND_IN = "stand-in light curves (not ELAsTiCC)"
DRY_PER_CLASS = 6  # a dry run without ELAsTiCC: generated light curves per class (`dry_generated`)
FLUX_TRANSFORMS = ("raw", "asinh")
MARGIN = 0.01  # macro-F1: the smallest effect of pre-training that matters (ours)


@dataclass(frozen=True)
class ElasticcRun:
    """One profile. Defaults = the `paper` profile (Sec. 5.4, Table 18, ATAT's split)."""

    data: str = "elasticc"  # elasticc (the real sample under <data>/elasticc) | stand-in
    encoders: tuple[str, ...] = ("tiny-shallow", "tiny")  # Table 4's two rows
    decoder: str = "tiny-shallow"  # the authors' code
    seeds: tuple[int, ...] = (0,)  # ATAT trains fold k with seed k; the authors ran fold 0 only
    fold: int = 0
    mask_ratio: float = 0.75  # Table 18 (the authors' code: 0.5, its dataset default)
    class_weighted: bool = False  # the authors' code: True (20 fixed weights; here inverse frequency)
    alert_mask: bool = False  # the paper's 0.8029 / 0.7106 rows: no alert mask
    max_per_band: int = elasticc.MAX_PER_BAND  # ATAT: 65 points per band (390 tokens at most)
    flux_transform: str = "raw"  # raw (the authors, ATAT) | asinh (asinh(x / 10), ours)
    processes: int = 1  # GPUs under `accelerate launch`: per-process batch = global batch / processes
    pretrain_epochs: int = 200  # Table 18
    pretrain_batch: int = 16384  # global
    pretrain_lr: float = 6.4e-3
    finetune_epochs: int = 25
    finetune_batch: int = 4096  # global
    finetune_lr: float = 8e-4
    warmup_steps: int = 2000  # both stages (Table 18)
    warmup_cap: float | None = None  # reduced profiles: at most this share of a run's steps (None: as printed)
    dropout: float = 0.2  # fine-tuning (Table 18)
    dropout_at: str = "authors"  # where: "authors" (attention, MLP output) | "paper" (attention, MLP hidden; App. A.2)
    drop_path: float = 0.2
    from_scratch: bool = True  # the control: the same classifier without pre-training
    test_per_class: int = 1000  # ATAT's common test set
    standin_per_class: int = 900  # stand-in only: objects per class (before the split)
    standin_seed: int = 0
    length_buckets: int = 8  # ours, for cost: batches of similar length (a deviation); 0 = uniform, the paper's
    progress: bool = True

    def __post_init__(self):
        if self.data not in ("elasticc", "stand-in"):
            raise ValueError(f"data must be 'elasticc' or 'stand-in', got {self.data!r}")
        if self.flux_transform not in FLUX_TRANSFORMS:
            raise ValueError(f"flux_transform must be one of {FLUX_TRANSFORMS}, got {self.flux_transform!r}")
        if self.processes < 1:
            raise ValueError(f"processes must be >= 1, got {self.processes}")
        for e in (*self.encoders, self.decoder):
            size(e)  # raises on an unknown size

    def model_config(self, encoder: str) -> RoMAEConfig:
        return RoMAEConfig(token_dim=2, n_axes=2, encoder=size(encoder), decoder=size(self.decoder), use_cls=True,
                           mask_ratio=self.mask_ratio)

    def _train(self, epochs, batch, lr, betas, n) -> TrainConfig:
        per = max(1, min(batch // self.processes, n))
        steps = epochs * -(-n // (per * self.processes))
        return TrainConfig(epochs=epochs, batch_size=per, lr=lr, betas=betas, weight_decay=0.05, grad_clip=10.0,
                           warmup_steps=self.warmup_steps if self.warmup_cap is None else
                           min(self.warmup_steps, int(self.warmup_cap * steps)), progress=self.progress,
                           length_buckets=self.length_buckets, log_every=10, processes=self.processes)

    def pretrain_config(self, n: int) -> TrainConfig:
        return self._train(self.pretrain_epochs, self.pretrain_batch, self.pretrain_lr, (0.9, 0.95), n)

    def finetune_config(self, n: int) -> TrainConfig:
        return self._train(self.finetune_epochs, self.finetune_batch, self.finetune_lr, (0.9, 0.999), n)


PROFILES = {
    "paper": ElasticcRun(),
    # the stand-in on this CPU in ~25 min: 7 classes x 900 objects, RoMAE-tiny-shallow, batch 128
    "quick": ElasticcRun(data="stand-in", encoders=("tiny-shallow",), pretrain_epochs=50, pretrain_batch=128,
                         pretrain_lr=1e-3, finetune_epochs=20, finetune_batch=128, test_per_class=200, warmup_cap=0.1),
    # seconds: 7 classes x 30 objects, 2 + 2 epochs
    "smoke": ElasticcRun(data="stand-in", encoders=("tiny-shallow",), pretrain_epochs=2, pretrain_batch=32,
                         pretrain_lr=1e-3, finetune_epochs=2, finetune_batch=32, test_per_class=8,
                         standin_per_class=30, warmup_cap=0.1, progress=False),
}


def config(profile: str, **overrides) -> ElasticcRun:
    """The settings of a profile with optional overrides (e.g. data='stand-in', alert_mask=True)."""
    return dataclasses.replace(PROFILES[check_profile(profile)], **overrides)


# the plan's training-set size: the paper's ~1.8 M light curves (Sec. 5.4) less ATAT's 20 x 1,000-object test
# set, 4 of the 5 folds of the rest (approximate: the exact count needs the data)
PAPER_TRAIN_OBJECTS = 1_424_000


def paper_trainings(processes: int = 1) -> list[Training]:
    """Notebook 13's paper trainings (`romae.compendium.plan`): per encoder the pre-training and the fine-tunings (pre-trained
    and from scratch), light curves at ATAT's cap of 65 points per band."""
    cfg, out = config("paper", processes=processes), []
    shape = dict(n_tokens=cfg.max_per_band * len(elasticc.BANDS), samples=PAPER_TRAIN_OBJECTS, processes=processes,
                 padded=True, source="~1.8 M light curves (Sec. 5.4), ATAT's split", feed="store")
    for encoder in cfg.encoders:
        model = cfg.model_config(encoder)
        clf = prediction_config(model, n_outputs=len(elasticc.CLASSES), dropout=cfg.dropout, drop_path=cfg.drop_path,
                                dropout_at=cfg.dropout_at)
        out += [Training(f"RoMAE-{encoder} pre-training", "pretrain", model, cfg.pretrain_config(shape["samples"]),
                         runs=len(cfg.seeds), **shape),
                Training(f"RoMAE-{encoder} fine-tuning", "finetune", clf, cfg.finetune_config(shape["samples"]),
                         runs=len(cfg.seeds) * (1 + cfg.from_scratch), **shape)]
    return out


def _transform(name: str):
    return None if name == "raw" else (lambda v: torch.asinh(v / 10.0))


def _generated_store(name: str, module, n_per_class: int, seed: int) -> tuple[Path, pd.DataFrame]:
    """Write `module.generate(n_per_class, seed=seed)` once into a store folder keyed by its size, seed and the
    generator's source (classes and bands: the module's CLASSES and BANDS)."""
    src = hashlib.sha256(inspect.getsource(module).encode()).hexdigest()[:12]
    folder = CACHE / "stores" / f"{name}-{n_per_class}-{seed}-{src}"
    meta_file = folder / "meta.csv"
    with store.build_lock(folder):  # several processes: one generates, the others wait for it
        if not (store.has_shard(folder, "part-0") and meta_file.is_file()):
            obs, meta = module.generate(n_per_class, seed=seed)
            store.write_shard(folder, "part-0", obs, id="object_id", time="mjd", variable="band",
                              value=["flux", "flux_err"], flag="photflag", labels=meta.set_index("object_id").label,
                              variables=module.BANDS, classes=module.CLASSES,
                              source=dict(generator=module.__name__, source=src, n_per_class=n_per_class, seed=seed))
            files.write_atomic(meta_file, meta.to_csv(index=False))
    return folder, pd.read_csv(meta_file)


def standin_store(cfg: ElasticcRun) -> tuple[Path, pd.DataFrame]:
    """Generate the stand-in once into a store folder keyed by its size, seed and the generator's source."""
    return _generated_store("standin", lightcurves, cfg.standin_per_class, cfg.standin_seed)


def dry_generated(cfg: ElasticcRun, root=None) -> bool:
    """Whether this run trains on generated light curves of ELAsTiCC's shape (`elasticc.generate`, ATAT's 20
    classes, up to 390 tokens): a dry run (`romae.runtime`) that asks for ELAsTiCC where its training sample is
    absent (the one-class SNANA sample does not count). Labelled `runtime.DRY_LABEL`; not data."""
    return runtime.dry_run() and cfg.data == "elasticc" and not elasticc.present(root)


def build(cfg: ElasticcRun, root=None) -> dict:
    """The store and its fold-`cfg.fold` views: {train, validation, test, classes, meta, partitions, stand_in}."""
    if cfg.data == "stand-in":
        folder, meta = standin_store(cfg)
        parts = elasticc.partitions(meta.object_id, meta.label, test_per_class=cfg.test_per_class)
        partition_source = "ATAT's partitions code on the stand-in"
    elif dry_generated(cfg, root):  # one test object per class, the rest in ATAT's 5 folds
        folder, meta = _generated_store("dry-elasticc", elasticc, DRY_PER_CLASS, 0)
        parts = elasticc.partitions(meta.object_id, meta.label, test_per_class=1)
        partition_source = "ATAT's partitions code on the generated light curves"
    else:
        folder, meta = elasticc.convert(root, progress=cfg.progress)
        elasticc.check_classes(meta, root)  # e.g. the one-class SNANA sample: DataMissing, before any training
        paper_file = files.data_root(root) / "elasticc" / "data_partition_paper" / "partitions.parquet"
        if paper_file.is_file():
            parts, partition_source = elasticc.read_partitions(paper_file), "ATAT's published partitions.parquet"
        else:
            parts = elasticc.partitions(meta.object_id, meta.label, test_per_class=cfg.test_per_class)
            partition_source = "ATAT's partitions code re-run (not ATAT's exact split: its object order is not reproducible)"
    data = store.TokenStore(folder, max_per_variable=cfg.max_per_band, keep=elasticc.alert_mask if cfg.alert_mask else None,
                            value_transform=_transform(cfg.flux_transform),
                            name=f"alert={cfg.alert_mask},flux={cfg.flux_transform}")
    ids = elasticc.fold(parts, cfg.fold)
    pos = {oid: i for i, oid in enumerate(data.ids)}
    missing = [o for o in ids["test"] + ids["train"] if o not in pos]
    if missing:
        raise ValueError(f"{len(missing)} partition objects (e.g. {missing[0]!r}) are not in the light curves")
    views = {k: data.subset(np.array(sorted(pos[o] for o in v), dtype=np.int64)) for k, v in ids.items()}
    views["validation"] = views["validation"].subset(np.arange(0, len(views["validation"]), 64))  # authors: every 64th
    if runtime.dry_run():  # a few light curves per set
        views = {k: v.subset(np.arange(runtime.dry_count(len(v)))) for k, v in views.items()}
    return dict(**views, classes=list(data.classes), meta=meta, partitions=parts, store=data,
                stand_in=cfg.data == "stand-in", generated=dry_generated(cfg, root), partition_source=partition_source)


def data_needs(profile: str = "smoke", data: str = "", **_params) -> list[Need]:
    """What the notebook needs under the data root: ELAsTiCC's training sample for `data="elasticc"` (the
    paper profile); the stand-in is generated. The SNANA sample feeds the reader's demonstration only."""
    cfg = config(profile, **({"data": data} if data else {}))
    demo = Need(("elasticc-sample", "elasticc"), "SNANA FITS light curves for the reader's demonstration",
                optional=True)
    return [demo] + ([Need(("elasticc",), "the ELAsTiCC training sample (extracted FITS files)")]
                     if cfg.data == "elasticc" else [])


def find(cfg: ElasticcRun, root=None) -> tuple[bool, str]:
    """(available, message): whether the run's data is there, and how to get it if not."""
    if cfg.data == "stand-in":
        return True, ""
    try:
        found = elasticc.present(root)  # the training sample's folders, not any SNANA files (the one-class sample)
        return found, "" if found else elasticc.missing_message(root)
    except FileNotFoundError as e:
        return False, f"{e}. {elasticc.missing_message(root)}"


def data_label(d: dict) -> str:
    """What a run's light curves are, for printed lines: the stand-in, a dry run's generated ones, or ELAsTiCC."""
    return "STAND-IN, not ELAsTiCC" if d["stand_in"] else runtime.DRY_LABEL if d["generated"] else "ELAsTiCC"


def _weights(labels: torch.Tensor, n_classes: int) -> tuple[float, ...]:
    counts = torch.bincount(labels, minlength=n_classes).double()
    w = torch.where(counts > 0, counts.sum() / (n_classes * counts.clamp(min=1)), torch.zeros_like(counts))
    return tuple(round(float(x), 6) for x in w)


def _note(cfg: ElasticcRun, d: dict, res: dict, encoder: str, pretrained: bool) -> str:
    where = (f"{STAND_IN}: {len(d['classes'])} classes x {cfg.standin_per_class} generated objects, "
             f"stand-in, not ELAsTiCC" if d["stand_in"] else
             f"{runtime.DRY_LABEL}: ATAT's {len(d['classes'])} classes x {DRY_PER_CLASS} generated light curves, not "
             "ELAsTiCC" if d["generated"] else "ELAsTiCC training sample")
    pre = res["steps"]["pretrain"]
    return (f"{where}; fold {cfg.fold} ({d['partition_source']}): {len(d['train'])} train / {len(d['test'])} test; "
            f"RoMAE-{encoder}, " + (f"pre-trained {cfg.pretrain_epochs} epochs ({pre} steps, mask {cfg.mask_ratio}), "
                                    if pretrained else "from scratch, ")
            + f"fine-tuned {cfg.finetune_epochs} epochs ({res['steps']['finetune']} steps); flux {cfg.flux_transform}; "
            f"alert mask {'on' if cfg.alert_mask else 'off'}; class-weighted {'yes' if cfg.class_weighted else 'no'}; "
            f"drop-path {cfg.drop_path:g} as {DROP_PATH_RULE}; "
            + (f"length-bucketed batches (windows of {cfg.length_buckets} batches sorted by length; the paper: uniform)"
               if cfg.length_buckets else "uniform batches") + "; model after the last epoch")


def setting(cfg: ElasticcRun, encoder: str, pretrained: bool) -> str:
    """The summary's setting: the paper's row name only for the real data, pre-trained, without alert mask."""
    name = f"RoMAE-{encoder}"
    extra = ([] if pretrained else ["from scratch"]) + (["alert mask"] if cfg.alert_mask else [])
    if cfg.data == "stand-in":
        return ", ".join([STAND_IN, name, "pre-trained" if pretrained else "from scratch"]
                         + (["alert mask"] if cfg.alert_mask else []))
    return ", ".join([name] + extra)


def run(profile: str = "smoke", data_root=None, reports_dir=None, cache_dir=None, refresh: bool = False,
        **overrides) -> dict:
    """Pre-train + fine-tune (and from scratch) every encoder and seed; record rows; save the table."""
    cfg = config(profile, **overrides)
    if dry_generated(cfg, data_root):
        print(f"ELAsTiCC's training sample is not under the data root; {runtime.DRY_LABEL}")
        cfg = dataclasses.replace(cfg, seeds=runtime.dry_seeds(cfg.seeds))
    else:
        require(data_needs(profile, data=cfg.data), data_root)  # DataMissing naming the fetch command
    t0 = time.perf_counter()
    d = build(cfg, data_root)
    train, test = d["train"], d["test"]
    key = dict(data=train.fingerprint(), test=test.fingerprint(), fold=cfg.fold, stand_in=d["stand_in"])
    rows, results = [], {}
    for encoder in cfg.encoders:
        model_cfg = cfg.model_config(encoder)
        head = dict(class_weights=_weights(train.labels, len(d["classes"]))) if cfg.class_weighted else {}
        for seed in cfg.seeds:
            for pretrained in (True, False) if cfg.from_scratch else (True,):
                res = pretrain_finetune_kept(
                    f"elasticc_{'standin' if d['stand_in'] else 'real'}_{encoder}", train, test, model_cfg,
                    finetune=cfg.finetune_config(len(train)),
                    pretrain=cfg.pretrain_config(len(train)) if pretrained else None, n_outputs=len(d["classes"]),
                    seed=seed, key=key, dropout=cfg.dropout, drop_path=cfg.drop_path, dropout_at=cfg.dropout_at,
                    head_overrides=head,
                    val_data=d["validation"], eval_batch=256, cache_dir=cache_dir, refresh=refresh,
                    checkpoints=profile != "smoke", profile=profile)
                label = setting(cfg, encoder, pretrained) + (", generated (dry run)" if d["generated"] else "")
                results[(label, seed)] = res
                rows.append(dict(setting=label, encoder=encoder, pretrained=pretrained, seed=seed, **res["metrics"],
                                 pretrain_steps=res["steps"]["pretrain"], finetune_steps=res["steps"]["finetune"],
                                 pretrain_seconds=res["seconds"]["pretrain"],
                                 finetune_seconds=res["seconds"]["finetune"], note=_note(cfg, d, res, encoder, pretrained)))
    per_seed = pd.DataFrame(rows)
    effect = pd.concat([pretraining_effect(per_seed, m) for m in ("macro_f1", "accuracy")], ignore_index=True)
    flags = {}
    for label, f in per_seed.groupby("setting", sort=False):
        runs = [results[(label, s)] for s in f.seed]
        curves = training_losses(runs)
        flags[label] = "; ".join(x for x in map(loss_flags, curves) if x)  # as `record` notes it
        row_scale = run_scale(cfg, d, bool(f.pretrained.iloc[0]), len(f))
        for metric in ("macro_f1", "accuracy"):
            n = len(f)
            verdicts = "; ".join(f"pre-trained minus from scratch ({r.metric}): {r.text}" for r in effect.itertuples()
                                 if r.metric == metric and label in (r.pretrained, r.scratch))
            record(EXPERIMENT, label, metric, float(f[metric].mean()), ours_std=float(f[metric].std(ddof=1)) if n > 1 else None,
                   n_seeds=n, profile=profile, scale=row_scale, losses=curves,
                   note=f.note.iloc[0] + (f"; {verdicts}" if verdicts else ""), reports_dir=reports_dir)
    table = comparison_table(per_seed, profile, d["stand_in"], d["generated"])
    save_table(table, EXPERIMENT, reports_dir)
    save_table(per_seed.drop(columns="note"), f"{EXPERIMENT}_per_seed", reports_dir)
    return dict(config=cfg, profile=profile, found=True, message="", data=d, results=results, per_seed=per_seed,
                table=table, pretraining_effect=effect, training_flags=flags, seconds=time.perf_counter() - t0)


def run_scale(cfg: ElasticcRun, d: dict, pretrained: bool, n_seeds: int) -> dict:
    """A row's scale (`report.scale`): the light curves (ELAsTiCC, the stand-in, or a dry run's generated ones),
    how many trained, epochs (pre-training + fine-tuning) and seeds, beside the `paper` profile's (Table 18; the
    authors ran one seed, fold 0)."""
    paper = PROFILES["paper"]
    dataset = ("stand-in light curves" if d["stand_in"] else "generated light curves (dry run)" if d["generated"]
               else "ELAsTiCC")
    return scale(dataset=(dataset, "ELAsTiCC"),
                 data=(len(d["train"]), None),  # the paper gives ~1.8 M light curves in all, not its training count
                 epochs=(f"{cfg.pretrain_epochs if pretrained else 0} + {cfg.finetune_epochs}",
                         f"{paper.pretrain_epochs if pretrained else 0} + {paper.finetune_epochs}"),
                 seeds=(n_seeds, len(paper.seeds)))


training_losses = report.training_losses  # the loss curves of pretrain_finetune results, for record(losses=)


def pretraining_effect(per_seed: pd.DataFrame, metric: str = "macro_f1", margin: float = MARGIN) -> pd.DataFrame:
    """Per encoder, pre-trained minus from scratch, paired by seed, with its uncertainty and verdict
    (`report.difference`; one seed: "not resolved at this scale (1 seed)")."""
    cols = ["encoder", "metric", "pretrained", "scratch", "difference", "se", "n_seeds", "margin", "verdict", "text"]
    rows = []
    for enc, g in per_seed.groupby("encoder", sort=False):
        pre, scratch = g[g.pretrained].set_index("seed"), g[~g.pretrained].set_index("seed")
        seeds = pre.index.intersection(scratch.index)
        if len(seeds) == 0:
            continue
        res = difference(pre.loc[seeds, metric].to_numpy(), scratch.loc[seeds, metric].to_numpy(), margin,
                         names=("pre-trained", "from scratch"))
        rows.append(dict(encoder=enc, metric=metric, pretrained=pre.setting.iloc[0], scratch=scratch.setting.iloc[0],
                         difference=res["diff"], se=res["se"], n_seeds=res["n"], margin=margin, verdict=res["verdict"],
                         text=difference_text(res)))
    return pd.DataFrame(rows, columns=cols)


def flux_scale(data: store.TokenStore, flux_transform: str = "raw", limit: int = 2000) -> dict:
    """How large the pre-training loss is before the model learns anything: per light curve, the MSE of predicting
    zero for every token (the mean over its tokens of (flux^2 + error^2) / 2, in the units the model sees: FLUXCAL^2
    for raw flux). Returns its 5th, 50th and 95th percentiles and max over up to `limit` light curves (evenly
    spread over the view), and their count. A masked-token MSE on raw flux moves with the brightness of the light
    curves in a batch as much as with what the model has learned."""
    idx = np.unique(np.linspace(0, len(data) - 1, min(limit, len(data))).round().astype(np.int64))
    f = _transform(flux_transform)
    mse = []
    for i in idx:
        v = torch.as_tensor(data.sample(int(i))["values"], dtype=torch.float64)
        v = v if f is None else f(v)
        mse.append(float((v ** 2).mean()))
    q = np.percentile(mse, [5, 50, 95])
    return dict(p5=float(q[0]), median=float(q[1]), p95=float(q[2]), max=float(np.max(mse)), n=len(mse))


def comparison_table(per_seed: pd.DataFrame, profile: str, stand_in: bool, generated: bool = False) -> pd.DataFrame:
    """Table 4 as published beside ours. On the stand-in (or a dry run's generated light curves), ours sit in a
    separate column: a number on generated light curves is not comparable with any published ELAsTiCC number."""
    peers = pd.DataFrame(peer_values(EXPERIMENT))
    out = peers[["model", "value", "source"]].rename(columns={"value": "ELAsTiCC macro-F1 (published)"})
    col = (f"{STAND_IN} macro-F1 (ours, {profile})" if stand_in else f"{runtime.DRY_LABEL} macro-F1 (ours, {profile})"
           if generated else f"ELAsTiCC macro-F1 (ours, {profile})")
    ours = per_seed.groupby("setting", sort=False).agg(macro_f1=("macro_f1", "mean"), accuracy=("accuracy", "mean"),
                                                       n=("seed", "size")).reset_index()
    ours = pd.DataFrame({"model": ours.setting + " (ours, mean of " + ours.n.astype(str) + " seed(s))",
                         col: ours.macro_f1, "accuracy (ours)": ours.accuracy, "source": "this run"})
    return pd.concat([out, ours], ignore_index=True)


def confusion(res: dict, label: str, seed: int) -> np.ndarray:
    """Row-normalised confusion matrix [true, predicted] of one classifier on the test set."""
    from sklearn.metrics import confusion_matrix

    d, r = res["data"], res["results"][(label, seed)]
    y, p = d["test"].labels.numpy(), r["outputs"].argmax(-1).numpy()
    m = confusion_matrix(y, p, labels=range(len(d["classes"]))).astype(float)
    return m / np.maximum(m.sum(1, keepdims=True), 1)


# ----------------------------------------------------------------------------- figures

def title_tag(profile: str) -> str:
    """'(quick profile, reduced)' for a figure title; '(paper profile)' at the paper's settings."""
    return f"({report.title_tag(profile)})"


def plot_light_curves(data: store.TokenStore, idx, classes=None, title: str = ""):
    """Flux +- error against days since the first observation, one colour per band, one panel per sample."""
    colors = dict(zip(range(6), ["tab:purple", "tab:green", "tab:red", "tab:orange", "tab:brown", "k"]))
    idx = list(idx)
    fig, axes = plt.subplots(1, len(idx), figsize=(3.6 * len(idx), 2.9), squeeze=False)
    labels = data.labels.numpy()
    for ax, i in zip(axes[0], idx):
        s = data.sample(i)
        t = s["time"] - s["time"][0]
        for b in np.unique(s["variable"]):
            m = s["variable"] == b
            ax.errorbar(t[m], s["values"][m, 0], s["values"][m, 1], fmt="o", ms=2.5, lw=0.6, color=colors[int(b)],
                        label=data.variables[int(b)])
        name = (classes or data.classes)[labels[i]] if labels[i] >= 0 else ""
        ax.set(title=f"{name} ({len(t)} points)", xlabel="days since first point")
    axes[0, 0].set(ylabel="flux (FLUXCAL)")
    axes[0, -1].legend(fontsize=7, ncol=2)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_confusion(res: dict, label: str, seed: int):
    m = confusion(res, label, seed)
    classes = res["data"]["classes"]
    fig, ax = plt.subplots(figsize=(0.55 * len(classes) + 3, 0.5 * len(classes) + 2))
    im = ax.imshow(m, cmap="Blues", vmin=0, vmax=1)
    for (i, j), v in np.ndenumerate(m):
        if v >= 0.005:
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7, color="w" if v > 0.5 else "k")
    ax.set(xticks=range(len(classes)), yticks=range(len(classes)), xlabel="predicted", ylabel="true",
           title=f"{label}, seed {seed}\n{title_tag(res['profile'])}, row-normalised")
    ax.set_xticklabels(classes, rotation=45, ha="right", fontsize=8)
    ax.set_yticklabels(classes, fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.04)
    fig.tight_layout()
    return fig


def plot_learning_curves(res: dict):
    """Pre-training loss, and fine-tuning loss of the pre-trained and from-scratch classifiers; a flagged training
    (`report.loss_flags`) says so in its legend entry."""
    stand_in, cfg, flags = res["data"]["stand_in"], res["config"], res.get("training_flags", {})
    flag = lambda label: " [TRAINING FLAG]" if flags.get(label) else ""  # noqa: E731
    runs = [dict(pretrain=r["pretrain_history"], finetune=r["finetune_history"],
                 pretrain_label=f"{label.split(', ')[-2] if stand_in else label}, seed {seed}{flag(label)}",
                 finetune_label=f"{label.rsplit(', ', 1)[-1]}, seed {seed}{flag(label)}")
            for (label, seed), r in res["results"].items()]
    tag, data = title_tag(res["profile"]), "stand-in" if stand_in else data_label(res["data"])
    units = "FLUXCAL²" if cfg.flux_transform == "raw" else f"{cfg.flux_transform} flux²"
    return plot_histories(runs, pretrain_ylabel=f"masked-token MSE ({units})", finetune_ylabel="cross-entropy",
                          yscale=("log", "log"), titles=(f"pre-training on {data} {tag}", f"fine-tuning on {data} {tag}"))


def main(argv=None) -> None:
    """`accelerate launch -m romae.experiments.elasticc --profile paper --processes 16`: train (and cache)
    the paper profile on several GPUs; the notebook then reads the cached results."""
    import argparse

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--profile", default="paper")
    p.add_argument("--data-root", default=None)
    p.add_argument("--processes", type=int, default=1)
    p.add_argument("--alert-mask", action="store_true")
    p.add_argument("--class-weighted", action="store_true")
    p.add_argument("--mask-ratio", type=float, default=None)
    a = p.parse_args(argv)
    over = dict(processes=a.processes, alert_mask=a.alert_mask, class_weighted=a.class_weighted)
    if a.mask_ratio is not None:
        over["mask_ratio"] = a.mask_ratio
    res = run(a.profile, data_root=a.data_root, **over)
    print(res["message"] or res["table"].to_string())


if __name__ == "__main__":
    main()


from ..compendium import plan as _plan  # noqa: E402 (registered once defined)

_plan.register("13", paper_trainings, split_batch=True)  # the whole-paper plan lists it
