"""Tiny ImageNet (Sec. 5.2, Table 2): RoPE with and without [CLS] against absolute sin/cos, on real images.

Each variant of Table 2 is pre-trained as a masked autoencoder and fine-tuned on its own, through the
shared recipe `romae.recipe.pretrain_finetune`:
- "RoPE, no [CLS] (mean head)": 2-D axial p-RoPE on the (row, column) patch grid, no [CLS] in either
  stage, classification head on the mean of the outputs;
- "RoPE, [CLS]": the same with a [CLS] token at the origin, head on [CLS];
- "absolute sin/cos, [CLS]": the authors' baseline, a 1-D sin/cos table over the flattened patch grid
  added to the embeddings, no RoPE ("very similar to MAE");
- optional extra row "absolute 2-D sin/cos, [CLS]" (MAE's own 2-D table; not in the paper).

Images are patchified on the fly from uint8 storage (`romae.images`): ImageNet mean/std, (16, 16) patches
with integer grid positions, 75 % random masking and per-patch normalised targets (MAE's norm-pix) in
pre-training; fine-tuning with RandAugment (2, 9) (kornia, batched) and label smoothing 0.1 (the paper's
c = 0.9), Table 10's optimisers and schedules. Top-1 accuracy and macro-F1 on the 10,000 validation
images, from the model after the last epoch.

Profiles: `paper` = Table 10 (RoMAE-small, 200 + 15 epochs, batch 1024) on the official 64-px archive
resized to 224 px as the authors' code did (the paper does not say so), decoder 432 wide x 2 blocks (the
authors' code); `quick` = the shared 32-px subset on a CPU; `smoke` = seconds. Run the paper profile on
GPUs with `accelerate launch -m romae.experiments.tiny_imagenet --profile paper --processes 8`.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..compendium import plan, report
from .. import runtime
from ..config import RoMAEConfig, TrainConfig, check_profile, size
from ..data import tiny_imagenet
from ..data.catalog import Need, require
from ..images import GridDataset, from_images, mae_reconstruction, rand_augment
from ..model import RoMAEForPreTraining, prediction_config
from ..compendium.kept import pretrain_finetune_kept
from ..recipe import plot_learning_curves as plot_histories
from ..compendium.reference import paper_values, peer_values
from ..compendium.report import difference, difference_text, loss_flags, record, save_table, scale

EXPERIMENT = "table2_tiny_imagenet"
# Table 2's rows (the summary's settings) -> (pos_encoding, use_cls)
VARIANTS = {
    "RoPE, no [CLS] (mean head)": ("rope", False),
    "RoPE, [CLS]": ("rope", True),
    "absolute sin/cos, [CLS]": ("absolute", True),
    "absolute 2-D sin/cos, [CLS] (not in the paper)": ("absolute_nd", True),
}
TABLE2 = tuple(list(VARIANTS)[:3])
PAPER_CLASSES, PAPER_TRAIN_IMAGES = 200, 100_000  # the official archive: 500 training images per class (the plan)
PAPER_RESOLUTION = 64  # px, the official archive (Sec. 5.2: Tiny ImageNet); the paper profile resizes it to 224
# Table 2's two comparisons (Sec. 5.2): (A, B, what) with A - B reported per seed
COMPARISONS = (("RoPE, [CLS]", "absolute sin/cos, [CLS]", "RoPE vs absolute"),
               ("RoPE, no [CLS] (mean head)", "RoPE, [CLS]", "without vs with [CLS]"))
MARGIN = 0.01  # the smallest difference that matters: 1 point of accuracy or macro-F1 (Table 2's gaps: 0.4-2.5 points)


@dataclass(frozen=True)
class TinyImageNetRun:
    """One profile. Defaults = the `paper` profile (Sec. 5.2, App. D.1, Table 10, the authors' code)."""

    source: str = "official"  # official (64 px, 100,000 train) | subset (the shared 32 px) | auto | a zip path
    image_size: int | None = 224  # resize before patching: the authors' code (not in the paper); None = as stored
    patch: int = 16  # Table 10: (16, 16)
    variants: tuple[str, ...] = TABLE2
    encoder: str = "small"  # Sec. 5.2: RoMAE-small
    decoder: dict = dataclasses.field(default_factory=lambda: dict(d_model=432, n_heads=6, depth=2, d_ff=1728))
    #                 the authors' code: 432 wide x 2 blocks (App. A.1 says tiny-shallow)
    seeds: tuple[int, ...] = (0, 1, 2)  # the paper's number of seeds is not stated
    n_classes: int | None = None  # None: all 200; k: the first k WordNet ids (smoke runs)
    train_per_class: int | None = None  # None: every training image of the archive
    val_per_class: int | None = None  # None: all 50 validation images per class
    mask_ratio: float = 0.75  # Table 10
    pretrain_epochs: int = 200  # Table 10
    pretrain_batch: int = 1024  # global
    pretrain_lr: float = 2e-4
    pretrain_warmup: int = 2000
    finetune_epochs: int = 15
    finetune_batch: int = 1024
    finetune_lr: float = 1e-3
    finetune_warmup: int = 500
    warmup_cap: float | None = None  # reduced profiles: warm-up at most this share of a run's steps
    subset_from_official: bool = False  # reduced profiles: without the shared subset, cut the official archive to it
    weight_decay: float = 0.05  # both stages (Table 10)
    grad_clip: float = 1.0
    label_smoothing: float = 0.1  # PyTorch's epsilon = 1 - c, c = 0.9 (Table 10; the authors passed 0.1)
    rand_augment: tuple[int, int] | None = (2, 9)  # (ops, magnitude of 30) in fine-tuning; None = off
    processes: int = 1  # GPUs under `accelerate launch`: per-process batch = global batch / processes
    bf16: bool = False  # the paper's runs are FP32 (App. D.1)
    from_scratch: bool = False  # also fine-tune each variant without pre-training (a control)
    progress: bool = True

    def __post_init__(self):
        unknown = [v for v in self.variants if v not in VARIANTS]
        if unknown or not self.variants:
            raise ValueError(f"unknown variants {unknown}; choose from {list(VARIANTS)}")
        if self.processes < 1 or self.patch < 1:
            raise ValueError(f"processes and patch must be >= 1, got {self.processes}, {self.patch}")
        if not self.seeds:
            raise ValueError("seeds must name at least one seed")
        size(self.encoder)

    def model_config(self, variant: str, token_dim: int) -> RoMAEConfig:
        pos, cls = VARIANTS[variant]
        return RoMAEConfig(token_dim=token_dim, n_axes=2, encoder=size(self.encoder), decoder=dict(self.decoder),
                           pos_encoding=pos, use_cls=cls, mask_ratio=self.mask_ratio, normalize_targets=True)

    def _train(self, epochs, batch, lr, betas, warmup, n) -> TrainConfig:
        per = max(1, min(batch // self.processes, n))
        steps = epochs * -(-n // (per * self.processes))
        return TrainConfig(epochs=epochs, batch_size=per, lr=lr, betas=betas, weight_decay=self.weight_decay,
                           grad_clip=self.grad_clip, bf16=self.bf16, progress=self.progress, log_every=10,
                           processes=self.processes,
                           warmup_steps=warmup if self.warmup_cap is None else min(warmup, int(self.warmup_cap * steps)))

    def pretrain_config(self, n: int) -> TrainConfig:
        return self._train(self.pretrain_epochs, self.pretrain_batch, self.pretrain_lr, (0.9, 0.95),
                           self.pretrain_warmup, n)

    def finetune_config(self, n: int) -> TrainConfig:
        return self._train(self.finetune_epochs, self.finetune_batch, self.finetune_lr, (0.9, 0.999),
                           self.finetune_warmup, n)


PROFILES = {
    "paper": TinyImageNetRun(),
    # the shared 32-px subset (all 200 classes, 20,000 train / 10,000 val) on a 2-core CPU in ~40 min, designed
    # to learn well above chance (issue 23: >= 10x chance top-1) so the variants can be compared: 8 x 8 patches
    # (a 4 x 4 grid of 16 tokens: 4x cheaper than 4 x 4 patches, so 20 fine-tuning epochs fit), RoMAE-tiny-shallow
    # encoder and decoder, 4 pre-training epochs (batch 256), 20 fine-tuning epochs at batch 64 (1e-3 -> 5e-4:
    # more steps, the short run's main lever) without RandAugment (at 100 images per class and 20 epochs it slowed
    # learning; measured on 50 classes: 17.2 % with, 18.6 % without, in less time)
    "quick": TinyImageNetRun(source="subset", image_size=None, patch=8, encoder="tiny-shallow",
                             decoder=dict(size("tiny-shallow").__dict__), seeds=(0, 1), pretrain_epochs=4,
                             pretrain_batch=256, pretrain_lr=1e-3, finetune_epochs=20, finetune_batch=64,
                             finetune_lr=5e-4, rand_augment=None, warmup_cap=0.1, subset_from_official=True),
    # seconds: 10 classes x 20 images, 8 x 8 patches of the 32-px subset, 1 + 1 epochs
    "smoke": TinyImageNetRun(source="subset", image_size=None, patch=8, encoder="tiny-shallow",
                             decoder=dict(size("tiny-shallow").__dict__), seeds=(0,), n_classes=10,
                             train_per_class=20, val_per_class=10, pretrain_epochs=1, pretrain_batch=64,
                             pretrain_lr=1e-3, finetune_epochs=1, finetune_batch=64, warmup_cap=0.1, progress=False,
                             subset_from_official=True),
}


def paper_trainings(processes: int = 1) -> list[plan.Training]:
    """Notebook 10's paper trainings (`romae.compendium.plan`): each variant's pre-training and fine-tuning, every seed, on
    `processes` GPUs (the global batch split over them)."""
    cfg = config("paper", processes=processes)
    grid = cfg.image_size // cfg.patch
    out = []
    for variant in cfg.variants:
        model = cfg.model_config(variant, cfg.patch * cfg.patch * 3)
        clf = prediction_config(model, n_outputs=PAPER_CLASSES, label_smoothing=cfg.label_smoothing)
        shape = dict(n_tokens=grid * grid, samples=PAPER_TRAIN_IMAGES, processes=processes,
                     source="the official archive", feed="images")
        out += [plan.Training(f"{variant}: pre-training", "pretrain", model, cfg.pretrain_config(shape["samples"]),
                              runs=len(cfg.seeds), **shape),
                plan.Training(f"{variant}: fine-tuning", "finetune", clf, cfg.finetune_config(shape["samples"]),
                              runs=len(cfg.seeds) * (1 + cfg.from_scratch), **shape)]
    return out


def config(profile: str, **overrides) -> TinyImageNetRun:
    """The settings of a profile with optional overrides (e.g. seeds=(0,), variants=(...))."""
    return dataclasses.replace(PROFILES[check_profile(profile)], **overrides)


def data_needs(profile: str = "smoke", source: str = "", **_params) -> list[Need]:
    """What the notebook needs under the data root: the profile's archive (`source` overrides it). The
    reduced profiles' subset is only in the project's shared data: without it they cut the official
    archive to its size (`for_data`)."""
    cfg = config(profile, **({"source": source} if source else {}))
    if cfg.source == "subset" and cfg.subset_from_official:
        return [Need(("tiny_imagenet-subset", "tiny_imagenet"), "Tiny ImageNet (the shared 32-px subset, or the "
                     "official archive, cut to the subset's size)")]
    names = {"official": ("tiny_imagenet",), "subset": ("tiny_imagenet-subset",),
             "auto": ("tiny_imagenet", "tiny_imagenet-subset")}.get(cfg.source, (f"path:{cfg.source}",))
    return [Need(names, "Tiny ImageNet" + ("" if cfg.source in ("official", "subset", "auto") else f" at {cfg.source}"))]


def for_data(cfg: TinyImageNetRun, root=None) -> TinyImageNetRun:
    """`cfg` for the archives under the data root: a reduced profile whose shared subset is absent runs on
    the official archive cut to the subset's size (the first 100 training images of every class, all the
    validation images, resized to 32 px), as the subset was made (its MANIFEST)."""
    base = tiny_imagenet.folder(root)
    if (cfg.source == "subset" and cfg.subset_from_official and not (base / tiny_imagenet.SUBSET).is_file()
            and (base / tiny_imagenet.OFFICIAL).is_file()):
        return dataclasses.replace(cfg, source="official", image_size=cfg.image_size or 32,
                                   train_per_class=min(cfg.train_per_class or 100, 100))
    return cfg


def find(cfg: TinyImageNetRun, root=None) -> tuple[bool, str]:
    """(available, message): whether the run's archive is there, and how to get it if not."""
    try:
        tiny_imagenet.find(root, for_data(cfg, root).source)
        return True, ""
    except FileNotFoundError as e:
        return False, str(e)


def dry_split(split: str, n: int = runtime.DRY_EVAL, resolution: int = 64, seed: int = 0) -> dict:
    """A dry run's stand-in for a split of the official archive (`tiny_imagenet.load`'s keys): n generated
    64-px RGB images (a colour per class, with noise) of the paper's 200 classes, spread evenly over them;
    source "generated", path `runtime.DRY_LABEL`."""
    rng = np.random.default_rng([seed, tiny_imagenet.SPLITS.index(split)])
    labels = np.arange(n, dtype=np.int64) * PAPER_CLASSES // n
    colour = np.random.default_rng(seed).integers(0, 256, (PAPER_CLASSES, 3, 1, 1))[labels]
    noise = rng.integers(-48, 49, (n, 3, resolution, resolution))
    classes = [f"dry{k:03d}" for k in range(PAPER_CLASSES)]
    return dict(images=np.clip(colour + noise, 0, 255).astype(np.uint8), labels=labels, classes=classes,
                names=classes, files=[f"{split}/{i}.png" for i in range(n)], source="generated",
                path=runtime.DRY_LABEL, digest="generated", resolution=resolution)


def load(split: str, cfg: TinyImageNetRun, root=None, progress: bool | None = None) -> dict:
    """One split of the run's archive (`tiny_imagenet.load`); in a dry run without it, generated images of the
    paper's shapes (`dry_split`)."""
    if runtime.dry_run() and not find(cfg, root)[0]:
        return dry_split(split)
    return tiny_imagenet.load(split, root, source=for_data(cfg, root).source,
                              progress=cfg.progress if progress is None else progress)


def _select(labels: np.ndarray, n_classes: int | None, per_class: int | None, files=None) -> np.ndarray:
    """Indices of the first `per_class` images of each of the first `n_classes` classes: by image number
    (`n01443537_7.JPEG` before `_10`) when the file names are given, else in file order."""
    keep = labels < n_classes if n_classes is not None else np.ones(len(labels), bool)
    idx = np.flatnonzero(keep)
    if per_class is not None:
        if files is not None:  # natural order of the names within each class
            key = [tiny_imagenet._natural(files[i]) for i in idx]
            idx = idx[sorted(range(len(idx)), key=lambda j: (labels[idx[j]], key[j]))]
        rank = pd.Series(labels[idx]).groupby(labels[idx]).cumcount().to_numpy()
        idx = np.sort(idx[rank < per_class])
    return idx


def build(cfg: TinyImageNetRun, root=None) -> dict:
    """{train, test (GridDatasets), classes, names, source, resolution, digest}: the archive's train and val
    splits cut as `cfg` says; test = the validation images (the paper's evaluation set)."""
    cfg = for_data(cfg, root)
    splits = {s: load(s, cfg, root) for s in ("train", "val")}
    out = {}
    for name, split, per in (("train", "train", cfg.train_per_class), ("test", "val", cfg.val_per_class)):
        d = splits[split]
        idx = _select(np.asarray(d["labels"]), cfg.n_classes, per, d.get("files"))
        if len(idx) == 0:
            raise ValueError(f"no {split} images left after n_classes={cfg.n_classes}, per_class={per}")
        if runtime.dry_run():  # a few images spread over the classes
            idx = idx[np.unique(np.linspace(0, len(idx) - 1, runtime.dry_count(len(idx))).round().astype(int))]
        size_ = None if cfg.image_size is None else (cfg.image_size, cfg.image_size)
        out[name] = from_images(np.asarray(d["images"][idx]), np.asarray(d["labels"])[idx],
                                patch_size=cfg.patch, size=size_, classes=d["classes"][:cfg.n_classes])
    d = splits["train"]
    return dict(**out, classes=d["classes"][:cfg.n_classes], names=d["names"][:cfg.n_classes], source=d["source"],
                resolution=d["resolution"], digest=d["digest"][:16], path=d["path"])


def _note(cfg: TinyImageNetRun, d: dict, res: dict, n: int) -> str:
    src = {"official": "official Tiny ImageNet (64 px)",
           "subset": f"shared Tiny ImageNet subset ({d['resolution']} px; the official images are "
                     f"{PAPER_RESOLUTION} px)"}.get(d["source"], d["path"])
    shown = f"resized to {cfg.image_size} px" if cfg.image_size else f"at {d['resolution']} px"
    grid = d["train"].grid
    pre = res["steps"]["pretrain"]
    return (f"{src}, {shown}; {len(d['classes'])} classes, {len(d['train'])} train / {len(d['test'])} val images; "
            f"patch {cfg.patch}x{cfg.patch} -> {grid[0]}x{grid[1]} = {grid[0] * grid[1]} tokens; RoMAE-{cfg.encoder}; "
            + (f"pre-trained {cfg.pretrain_epochs} epochs ({pre} steps, batch {cfg.pretrain_batch}, mask "
               f"{cfg.mask_ratio}, norm-pix), " if pre else "from scratch, ")
            + f"fine-tuned {cfg.finetune_epochs} epochs ({res['steps']['finetune']} steps, batch {cfg.finetune_batch}"
            + (f", RandAugment {cfg.rand_augment}" if cfg.rand_augment else "") + f"); mean of {n} seed(s)")


def run_scale(cfg: TinyImageNetRun, d: dict, pretrained: bool, n_seeds: int) -> dict:
    """A row's scale (`report.scale`): this run's data, resolution, model, epochs (pre-training + fine-tuning) and
    seeds beside the paper's, read from the `paper` profile (Table 10) and the official archive."""
    paper = PROFILES["paper"]
    return scale(dataset=("generated images (dry run)" if d["source"] == "generated" else "Tiny ImageNet",
                          "Tiny ImageNet"),
                 data=(len(d["train"]), PAPER_TRAIN_IMAGES),
                 resolution=(f"{d['resolution']} px", f"{PAPER_RESOLUTION} px"),
                 model=(f"RoMAE-{cfg.encoder}", f"RoMAE-{paper.encoder}"),
                 epochs=(f"{cfg.pretrain_epochs if pretrained else 0} + {cfg.finetune_epochs}",  # a from-scratch
                         f"{paper.pretrain_epochs if pretrained else 0} + {paper.finetune_epochs}"),  # control: 0 + ...
                 seeds=(n_seeds, None))  # the paper does not say how many seeds its stds come from


training_losses = report.training_losses  # the loss curves of pretrain_finetune results, for record(losses=)


def comparisons(per_seed: pd.DataFrame, metric: str = "accuracy", margin: float = MARGIN) -> pd.DataFrame:
    """Table 2's comparisons (COMPARISONS) as paired differences over seeds (`report.difference`): per pair
    the mean of A - B, its standard error, the verdict ("resolved: A > B", "equal within +-margin", "not resolved
    at this scale") and, for macro-F1, the paper's own difference A - B (Table 2)."""
    paper = {r["setting"]: r["paper"] for r in paper_values() if r["experiment"] == EXPERIMENT}
    rows = []
    for a, b, what in COMPARISONS:
        x = per_seed[per_seed.setting == a].set_index("seed")[metric]
        y = per_seed[per_seed.setting == b].set_index("seed")[metric]
        seeds = x.index.intersection(y.index)
        if len(seeds) == 0:
            continue
        res = difference(x[seeds].to_numpy(), y[seeds].to_numpy(), margin, names=(a, b))
        rows.append(dict(comparison=what, a=a, b=b, metric=metric, difference=res["diff"], se=res["se"],
                         n_seeds=res["n"], margin=margin, verdict=res["verdict"], text=difference_text(res),
                         paper_difference=paper[a] - paper[b] if metric == "macro_f1" else np.nan))
    return pd.DataFrame(rows, columns=["comparison", "a", "b", "metric", "difference", "se", "n_seeds", "margin",
                                       "verdict", "text", "paper_difference"])


def _comparison_note(comp: pd.DataFrame, label: str) -> str:
    """The verdicts of the comparisons a row takes part in, for its note."""
    return "; ".join(f"{r.comparison} ({r.a} minus {r.b}, {r.metric}): {r.text}"
                     for r in comp.itertuples() if label in (r.a, r.b))


def run(profile: str = "smoke", data_root=None, reports_dir=None, cache_dir=None, refresh: bool = False,
        **overrides) -> dict:
    """Pre-train + fine-tune every variant and seed; record accuracy and macro-F1; save Table 2."""
    cfg = config(profile, **overrides)
    if not runtime.dry_run():  # a dry run without the data trains on generated images (`load`)
        require(data_needs(profile, **({"source": cfg.source} if "source" in overrides else {})), data_root)
    cfg = for_data(cfg, data_root)
    t0 = time.perf_counter()
    d = build(cfg, data_root)
    train, test = d["train"], d["test"]
    augment = None if cfg.rand_augment is None else rand_augment(*cfg.rand_augment)
    key = dict(data=d["digest"], n_classes=cfg.n_classes, train_per_class=cfg.train_per_class,
               image_size=cfg.image_size, patch=cfg.patch, normalise="imagenet")
    ft_key = dict(augment=None if augment is None else f"kornia RandAugment{cfg.rand_augment}, groups of 8")
    rows, results = [], {}
    for variant in cfg.variants:
        model_cfg = cfg.model_config(variant, train.token_dim)
        for seed in runtime.dry_seeds(cfg.seeds):
            for pretrained in (True, False) if cfg.from_scratch else (True,):
                res = pretrain_finetune_kept(
                    f"tiny_imagenet_{VARIANTS[variant][0]}_{'cls' if VARIANTS[variant][1] else 'mean'}",
                    train.with_augment(augment), test, model_cfg, pretrain_data=train, finetune_key=ft_key,
                    finetune=cfg.finetune_config(len(train)),
                    pretrain=cfg.pretrain_config(len(train)) if pretrained else None, n_outputs=len(d["classes"]),
                    seed=seed, key=key, head_overrides=dict(label_smoothing=cfg.label_smoothing),
                    eval_batch=256, cache_dir=cache_dir, refresh=refresh, checkpoints=profile != "smoke",
                    profile=profile)
                label = variant if pretrained else f"{variant}, from scratch"
                results[(label, seed)] = res
                rows.append(dict(setting=label, seed=seed, **res["metrics"],
                                 pretrain_steps=res["steps"]["pretrain"], finetune_steps=res["steps"]["finetune"],
                                 pretrain_seconds=res["seconds"]["pretrain"],
                                 finetune_seconds=res["seconds"]["finetune"]))
    per_seed = pd.DataFrame(rows)
    table = comparison_table(per_seed, profile)
    comp = pd.concat([comparisons(per_seed, m) for m in ("macro_f1", "accuracy")], ignore_index=True)
    flags = {}
    for label, f in per_seed.groupby("setting", sort=False):  # written by the main process only
        runs = [results[(label, s)] for s in f.seed]
        curves = training_losses(runs)
        flags[label] = "; ".join(x for x in map(loss_flags, curves) if x)  # as `record` notes it
        note = _note(cfg, d, runs[0], len(f))
        row_scale = run_scale(cfg, d, not label.endswith("from scratch"), len(f))
        for metric in ("macro_f1", "accuracy"):
            verdicts = _comparison_note(comp[comp.metric == metric], label)
            record(EXPERIMENT, label, metric, float(f[metric].mean()),
                   ours_std=float(f[metric].std(ddof=1)) if len(f) > 1 else None, n_seeds=len(f),
                   profile=profile, scale=row_scale, losses=curves,
                   note=note + (f"; {verdicts}" if verdicts else ""), reports_dir=reports_dir)
    save_table(table, EXPERIMENT, reports_dir)
    save_table(per_seed, f"{EXPERIMENT}_per_seed", reports_dir)
    save_table(comp.drop(columns="text"), f"{EXPERIMENT}_comparisons", reports_dir)
    return dict(config=cfg, profile=profile, found=True, message="", data=d, results=results, per_seed=per_seed,
                table=table, comparisons=comp, training_flags=flags, seconds=time.perf_counter() - t0)


def comparison_table(per_seed: pd.DataFrame, profile: str) -> pd.DataFrame:
    """Table 2 (the paper's F-score = macro-F1) beside ours: mean +- std over seeds of macro-F1 and accuracy."""
    paper = {r["setting"]: r for r in paper_values() if r["experiment"] == EXPERIMENT}
    g = per_seed.groupby("setting", sort=False)
    out = pd.DataFrame({
        "variant": list(g.groups),
        "paper F-score (Table 2)": [paper[s]["paper"] if s in paper else np.nan for s in g.groups],
        "paper std": [paper[s]["paper_std"] if s in paper else np.nan for s in g.groups],
        f"macro-F1 (ours, {profile})": g.macro_f1.mean().to_numpy(),
        "macro-F1 std": g.macro_f1.std(ddof=1).to_numpy(),
        f"accuracy (ours, {profile})": g.accuracy.mean().to_numpy(),
        "accuracy std": g.accuracy.std(ddof=1).to_numpy(),
        "seeds": g.seed.size().to_numpy(),
    })
    return out


def anchors() -> pd.DataFrame:
    """Published from-scratch results on Tiny ImageNet at 64 px (for scale; not comparable with 32 px)."""
    return pd.DataFrame(peer_values(EXPERIMENT))[["model", "metric", "value", "source"]]


# ----------------------------------------------------------------------------- figures

def title_tag(profile: str) -> str:
    """'(quick profile, reduced)' for a figure title; '(paper profile)' at the paper's settings."""
    return f"({report.title_tag(profile)})"


def pretrained_model(res: dict, label: str, seed: int) -> RoMAEForPreTraining:
    """The pre-training model (MAE) of one variant and seed, from the run's results, in eval mode."""
    r = res["results"][(label, seed)]
    if r.get("pretrained_state") is None:
        raise ValueError(f"{label!r} seed {seed} was not pre-trained")
    cfg = res["config"].model_config(label, res["data"]["train"].token_dim)
    model = RoMAEForPreTraining(cfg)
    model.load_state_dict(r["pretrained_state"])
    return model.eval()


def reconstruct(model: RoMAEForPreTraining, data: GridDataset, idx, seed: int = 0) -> dict:
    """MAE's picture (`romae.images.mae_reconstruction`) as images in [0, 1]: {original, masked, prediction,
    pasted} [B, C, H, W] (NaN where nothing is shown) and the mask [B, N]."""
    r = mae_reconstruction(model, data, idx, seed)
    return {k: v if k == "mask" else v.clamp(0, 1) for k, v in r.items()}


def plot_reconstructions(res: dict, label: str, seed: int, idx, mask_seed: int = 0):
    """Rows: samples; columns: original, masked input (grey = hidden), the hidden patches predicted, and the
    prediction pasted among the visible patches."""
    model = pretrained_model(res, label, seed)
    data = res["data"]["test"]
    r = reconstruct(model, data, idx, mask_seed)
    cols = (("original", "original"), ("masked", "masked input (75 %)"), ("prediction", "prediction (hidden patches)"),
            ("pasted", "reconstruction + visible"))
    fig, axes = plt.subplots(len(idx), 4, figsize=(7.2, 1.9 * len(idx)), squeeze=False)
    names = res["data"]["names"]
    for i, j in enumerate(idx):
        for k, (key, title) in enumerate(cols):
            img = r[key][i].permute(1, 2, 0).numpy()
            img = np.where(np.isnan(img), 0.5, img)
            axes[i, k].imshow(img, interpolation="nearest")
            axes[i, k].set_xticks([]), axes[i, k].set_yticks([])
            if i == 0:
                axes[i, k].set_title(title, fontsize=8)
        axes[i, 0].set_ylabel(names[int(data.labels[j])][:18], fontsize=7)
    fig.suptitle(f"{label}, seed {seed} {title_tag(res['profile'])}: validation images\n(norm-pix predictions "
                 "shown with each hidden patch's own mean and std, as MAE's figures)", fontsize=8)
    fig.tight_layout()
    return fig


def plot_learning_curves(res: dict):
    """Pre-training (masked-patch MSE, norm-pix) and fine-tuning (cross-entropy) loss of every run."""
    runs = [dict(pretrain=r["pretrain_history"], finetune=r["finetune_history"], pretrain_label=f"{label}, seed {seed}",
                 finetune_label=f"{label}, seed {seed}") for (label, seed), r in res["results"].items()]
    tag = title_tag(res["profile"])
    return plot_histories(runs, pretrain_ylabel="masked-patch MSE (norm-pix)",
                          finetune_ylabel="cross-entropy (label smoothing 0.1)", legend_size=6,
                          titles=(f"pre-training {tag}", f"fine-tuning {tag}"))


def plot_variants(res: dict):
    """Accuracy and macro-F1 per variant: each seed as a dot, the mean as a bar; marked: chance (1 / classes), the
    paper's F-score of each variant (Table 2, RoMAE-small at 64 px, +- its std) and the published from-scratch
    ViTs' accuracy at 64 px (`anchors`). Legends below the panels."""
    ps, profile = res["per_seed"], res["profile"]
    paper = {r["setting"]: r for r in paper_values() if r["experiment"] == EXPERIMENT}
    chance = 1 / len(res["data"]["classes"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), layout="constrained")
    for ax, metric in zip(axes, ("accuracy", "macro_f1")):
        means = ps.groupby("setting", sort=False)[metric].mean()
        names = list(means.index)
        x = np.arange(len(names))
        ax.bar(x, means.to_numpy(), 0.6, color="tab:blue", alpha=0.35, label=f"ours, mean over seeds ({profile})")
        for i, n in enumerate(names):
            v = ps[ps.setting == n][metric].to_numpy()
            ax.plot(np.full(len(v), i), v, "o", color="tab:blue", label="ours, one seed" if i == 0 else None)
        ax.axhline(chance, color="0.5", ls=":", lw=1, label=f"chance (1/{len(res['data']['classes'])})")
        if metric == "macro_f1":
            known = [(i, paper[n]) for i, n in enumerate(names) if n in paper]
            if known:
                ax.errorbar([i for i, _ in known], [r["paper"] for _, r in known],
                            yerr=[r["paper_std"] for _, r in known], fmt="D", color="k", ms=5, capsize=3,
                            label="paper (Table 2: RoMAE-small, 64 px) +- std")
        else:
            for k, a in enumerate(anchors().itertuples()):
                ax.axhline(a.value / 100, color=f"C{k + 2}", ls="--", lw=1, label=f"{a.model}, 64 px (published)")
        ax.set_xticks(x, [n.replace(", ", ",\n", 1) for n in names], fontsize=7)
        ax.set(ylabel=metric.replace("_", "-"), ylim=(0, None),
               title=f"{metric.replace('_', '-')} on the validation images {title_tag(profile)}")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1, frameon=False)
    axes[0].text(0.99, 0.5, "the paper gives no accuracy:\npublished from-scratch ViTs\nat 64 px for scale",
                 transform=axes[0].transAxes, ha="right", va="center", fontsize=7, color="0.3")
    return fig


def main(argv=None) -> None:
    """`accelerate launch -m romae.experiments.tiny_imagenet --profile paper --processes 8`: train (and
    cache) a profile on several GPUs; the notebook then reads the cached results."""
    import argparse

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--profile", default="paper")
    p.add_argument("--data-root", default=None)
    p.add_argument("--processes", type=int, default=1)
    p.add_argument("--source", default=None, help="official | subset | auto | a zip path")
    p.add_argument("--seeds", type=int, nargs="+", default=None)
    a = p.parse_args(argv)
    over = dict(processes=a.processes)
    if a.source:
        over["source"] = a.source
    if a.seeds:
        over["seeds"] = tuple(a.seeds)
    res = run(a.profile, data_root=a.data_root, **over)
    print(res["message"] or res["table"].to_string())


if __name__ == "__main__":
    main()

plan.register("10", paper_trainings, split_batch=True)  # the whole-paper plan lists it
