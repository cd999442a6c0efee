"""The notebook's `run`, its tables and the command line (`main`)."""

from __future__ import annotations

import time

import pandas as pd

from ...compendium import report
from ... import runtime
from ...audio import from_spectrograms
from ...data import esc50
from ...data.catalog import require
from ...compendium.kept import pretrain_finetune_kept
from ...compendium.reference import peer_values
from ...compendium.report import difference, difference_text, loss_flags, record, save_table, scale

from .profiles import (
    EXPERIMENT, SUBSET, SOURCES, MARGIN, ESC50Run, PROFILES, config, PAPER_CLIPS, ESC50_FOLDS, data_needs,
    setting)
from .clips import spectrograms, load_clips, _splits, _pretrain_set


def run(profile: str = "smoke", data_root=None, reports_dir=None, cache_dir=None, refresh: bool = False,
        **overrides) -> dict:
    """Pre-train (per source), fine-tune per split and seed (and from scratch); record accuracy (%)."""
    cfg = config(profile, **overrides)
    if not runtime.dry_run():  # a dry run without the data trains on generated clips (`load_clips`)
        require(data_needs(profile, audioset_dir=cfg.audioset_dir or ""), data_root)  # DataMissing, fetch command
    t0 = time.perf_counter()
    d = load_clips(cfg, data_root)
    specs = spectrograms(d["waves"], num_mel_bins=cfg.mel_bins)
    subset = d["source"] not in ("official", "generated") or cfg.protocol != "5fold"
    model_cfg = cfg.model_config()
    rows, results, views = [], {}, {}
    external = {s: _pretrain_set(cfg, s, data_root) for s in cfg.pretrain_sources if s != "esc50"}  # once for all folds
    generated = [SOURCES[s] for s, (_, k) in external.items() if "generated" in k]
    generated += ["ESC-50"] if d["source"] == "generated" else []
    splits = _splits(d, cfg)
    for split_name, tr, te in splits[:1] if runtime.dry_run() else splits:  # a dry run: the first fold
        train = from_spectrograms([specs[i] for i in tr], d["labels"][tr], patch_size=cfg.patch, classes=d["classes"])
        test = from_spectrograms([specs[i] for i in te], d["labels"][te], patch_size=cfg.patch, classes=d["classes"],
                                 mean=float(train.mean), std=float(train.std), target_frames=train.grids.shape[2])
        views[split_name] = dict(train=train, test=test, train_idx=tr, test_idx=te)
        esc_key = dict(esc50=d["source"], clips=[d["meta"].filename[i] for i in tr], fbank=dict(bins=cfg.mel_bins))
        for source in cfg.pretrain_sources:
            pre_data, pre_key = (None, esc_key) if source == "esc50" else external[source]
            for seed in runtime.dry_seeds(cfg.seeds):
                for pretrained in (True, False) if cfg.from_scratch else (True,):
                    if not pretrained and source != cfg.pretrain_sources[0]:
                        continue  # one from-scratch control per split and seed
                    res = pretrain_finetune_kept(
                        f"esc50_{source if pretrained else 'scratch'}", train, test, model_cfg,
                        finetune=cfg.finetune_config(len(train)),
                        pretrain=cfg.pretrain_config(len(train if pre_data is None else pre_data)) if pretrained else None,
                        pretrain_data=pre_data, key=pre_key if pretrained else esc_key,
                        finetune_key=dict(esc50_train=esc_key["clips"]) if pre_data is not None else None,
                        n_outputs=len(d["classes"]), seed=seed, head_overrides=dict(label_smoothing=cfg.label_smoothing),
                        eval_batch=64, cache_dir=cache_dir, refresh=refresh, checkpoints=profile != "smoke",
                        profile=profile)
                    label = setting(cfg, source, pretrained, subset)
                    results[(label, split_name, seed)] = res
                    rows.append(dict(setting=label, split=split_name, seed=seed, pretrain_source=source if pretrained else None,
                                     accuracy_pct=100 * res["metrics"]["accuracy"],
                                     macro_f1=res["metrics"]["macro_f1"], n_train=len(train), n_test=len(test),
                                     pretrain_steps=res["steps"]["pretrain"], finetune_steps=res["steps"]["finetune"],
                                     pretrain_seconds=res["seconds"]["pretrain"], finetune_seconds=res["seconds"]["finetune"]))
    per_run = pd.DataFrame(rows)
    effect = pretraining_effect(per_run)
    n_splits, flags = per_run.split.nunique(), {}
    for label, f in per_run.groupby("setting", sort=False):  # written by the main process only
        per_seed = f.groupby("seed").accuracy_pct.mean()  # mean over folds, per seed
        per_split = f.groupby("split", sort=False).accuracy_pct.mean()  # mean over seeds, per fold
        # the spread: over seeds when there are several, else over the folds (cross-validation with one seed)
        spread = (per_seed.std(ddof=1) if len(per_seed) > 1 else per_split.std(ddof=1) if len(per_split) > 1
                  else None)
        verdicts = "; ".join(f"{r.pretrained} minus {r.scratch}: {r.text}" for r in effect.itertuples()
                             if label in (r.pretrained, r.scratch))
        runs = [results[(label, r.split, r.seed)] for r in f.itertuples()]
        curves = training_losses(runs)
        flags[label] = "; ".join(x for x in map(loss_flags, curves) if x)  # as `record` notes it
        record(EXPERIMENT, label, "accuracy_pct", float(per_seed.mean()),
               ours_std=None if spread is None else float(spread), n_seeds=len(per_seed),
               profile=profile, scale=run_scale(cfg, d, f, n_splits, external), losses=curves,
               note=_note(cfg, d, f, subset, generated) + (f"; {verdicts}" if verdicts else ""),
               reports_dir=reports_dir)
    table = comparison_table(per_run, profile, subset)
    save_table(table, EXPERIMENT, reports_dir)
    save_table(per_run, f"{EXPERIMENT}_per_run", reports_dir)
    return dict(config=cfg, profile=profile, subset=subset, found=True, message="", data=d, views=views,
                results=results, per_run=per_run, table=table, pretraining_effect=effect, training_flags=flags,
                seconds=time.perf_counter() - t0)


def _clips_text(n_train: int, n_test: int, n_splits: int, protocol: str) -> str:
    return f"{n_train} train / {n_test} test clips x {n_splits} {'split(s)' if protocol == 'split' else 'fold(s)'}"


def run_scale(cfg: ESC50Run, d: dict, f: pd.DataFrame, n_splits: int, external: dict) -> dict:
    """A row's scale (`report.scale`): the clips it was fine-tuned and tested on and what it was pre-trained on,
    model, epochs (pre-training + fine-tuning), seeds and sample rate, beside the paper's (the `paper` profile,
    Table 11, and SSAST's 5-fold protocol on ESC-50's 2,000 clips: 1,600 train / 400 test per fold). A row
    pre-trained on the ESC-50 clips is set beside the paper's AudioSet-20k pre-training (Table 3's best row)."""
    paper, r = PROFILES["paper"], f.iloc[0]
    source = r.pretrain_source if isinstance(r.pretrain_source, str) else None
    pre_n = None if source is None else len(external[source][0]) if source in external else int(r.n_train)
    paper_source = source if source in PAPER_CLIPS and source != "esc50" else "audioset"
    ours = _clips_text(int(r.n_train), int(r.n_test), n_splits, cfg.protocol)
    theirs = _clips_text(PAPER_CLIPS["esc50"], 2_000 // ESC50_FOLDS, ESC50_FOLDS, paper.protocol)
    if source is not None:
        ours += f"; pre-training {pre_n} clips ({SOURCES[source]})"
        theirs += f"; pre-training {PAPER_CLIPS[paper_source]} clips ({SOURCES[paper_source]})"
    return scale(dataset=("generated clips (dry run)" if d["source"] == "generated" else "ESC-50", "ESC-50"),
                 data=(ours, theirs), resolution=(f"{d['sample_rate']} Hz", f"{esc50.SAMPLE_RATE} Hz"),  # SSAST: 16 kHz
                 model=(f"RoMAE-{cfg.encoder}", f"RoMAE-{paper.encoder}"),
                 epochs=(f"{cfg.pretrain_epochs if source else 0} + {cfg.finetune_epochs}",  # from scratch: 0 + ...
                         f"{paper.pretrain_epochs if source else 0} + {paper.finetune_epochs}"),
                 seeds=(f.seed.nunique(), None))  # the paper does not say how many seeds


training_losses = report.training_losses  # the loss curves of pretrain_finetune results, for record(losses=)


def pretraining_effect(per_run: pd.DataFrame, margin: float = MARGIN) -> pd.DataFrame:
    """Pre-trained minus from scratch, paired by (fold, seed) -- each fold of each seed is one replicate, trained
    and tested on the same clips in both arms -- with its uncertainty and verdict (`report.difference`): one row
    per pre-trained setting that has a from-scratch control."""
    cols = ["pretrained", "scratch", "difference", "se", "low", "high", "n_pairs", "margin", "verdict", "text"]
    scratch = [s for s in per_run.setting.unique() if s.endswith("from scratch")]
    if not scratch:
        return pd.DataFrame(columns=cols)
    acc = per_run.groupby(["setting", "split", "seed"], sort=False).accuracy_pct.mean()
    b = acc[scratch[0]]
    rows = []
    for a_name in (s for s in per_run.setting.unique() if s not in scratch):
        a = acc[a_name]
        pairs = a.index.intersection(b.index)  # (fold, seed)
        res = difference(a[pairs].to_numpy(), b[pairs].to_numpy(), margin, names=("pre-trained", "from scratch"))
        rows.append(dict(pretrained=a_name, scratch=scratch[0], difference=res["diff"], se=res["se"], low=res["low"],
                         high=res["high"], n_pairs=res["n"], margin=margin, verdict=res["verdict"],
                         text=difference_text(res, "points", replicates="fold x seed pairs")))
    return pd.DataFrame(rows, columns=cols)


def _note(cfg: ESC50Run, d: dict, f: pd.DataFrame, subset: bool, generated=()) -> str:
    r = f.iloc[0]
    where = ("ESC-50, official 5-fold cross-validation, " if not subset else
             f"{SUBSET}: ESC-50 shared subset ({len(d['labels'])} of 2,000 clips, 16 kHz), " if d["source"] != "official"
             else f"{SUBSET}: ESC-50 official clips of fold {cfg.split_fold} only (the shared subset's scale), ")
    pre = (f"pre-trained {cfg.pretrain_epochs} epochs ({r.pretrain_steps} steps, mask {cfg.mask_ratio}, norm-pix, "
           f"no [CLS]), " if pd.notna(r.pretrain_steps) else "from scratch, ")
    n_splits = f.split.nunique()
    if cfg.protocol == "cv" and n_splits > 1:
        per_split = f.groupby("split", sort=False).accuracy_pct.mean()
        spread = "std over seeds" if f.seed.nunique() > 1 else "ours_std: std over folds"
        split = (f"mean over {n_splits} cross-validation folds grouped by source recording ({spread}; fold accuracies "
                 f"{', '.join(f'{v:.1f}' for v in per_split)} %), {f.n_train.min()}-{f.n_train.max()} train / "
                 f"{f.n_test.min()}-{f.n_test.max()} test clips per fold")
    else:
        split = f"{f.split.iloc[0]}: {r.n_train} train / {r.n_test} test clips"
    return (where + f"{split}; RoMAE-{cfg.encoder}, 128-bin "
            f"Kaldi fbank, 16x16 patches; " + pre + f"fine-tuned {cfg.finetune_epochs} epochs ({r.finetune_steps} "
            f"steps), mean head; {f.seed.nunique()} seed(s)"
            + ("; dry run: the first fold only" if runtime.dry_run() and cfg.protocol == "5fold" else "")
            + (f"; {', '.join(generated)}: {runtime.DRY_LABEL}" if generated else ""))


def comparison_table(per_run: pd.DataFrame, profile: str, subset: bool) -> pd.DataFrame:
    """Table 3 and SSAST's from-scratch anchor as published, ours in a separate column."""
    peers = pd.DataFrame(peer_values(EXPERIMENT))
    out = peers[["model", "value", "source"]].rename(columns={"value": "ESC-50 accuracy % (published)"})
    col = f"{'subset' if subset else 'ESC-50'} accuracy % (ours, {profile})"
    g = per_run.groupby(["setting", "seed"], sort=False).accuracy_pct.mean().groupby(level=0, sort=False)
    ours = pd.DataFrame({"model": [f"{s} (ours)" for s in g.groups], col: g.mean().to_numpy(),
                         "std over seeds": g.std(ddof=1).to_numpy(), "seeds": g.size().to_numpy(),
                         "source": "this run"})
    return pd.concat([out, ours], ignore_index=True)


def main(argv=None) -> None:
    """`accelerate launch -m romae.experiments.esc50 --profile paper --audioset-dir /data/as20k --processes 4`"""
    import argparse

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--profile", default="paper")
    p.add_argument("--data-root", default=None)
    p.add_argument("--audioset-dir", default=None)
    p.add_argument("--sources", nargs="+", default=None, help="audioset librispeech esc50")
    p.add_argument("--librispeech-splits", nargs="+", default=None)
    p.add_argument("--processes", type=int, default=1)
    a = p.parse_args(argv)
    over = dict(processes=a.processes, audioset_dir=a.audioset_dir)
    if a.sources:
        over["pretrain_sources"] = tuple(a.sources)
    if a.librispeech_splits:
        over["librispeech_splits"] = tuple(a.librispeech_splits)
    res = run(a.profile, data_root=a.data_root, **over)
    print(res["message"] or res["table"].to_string())
