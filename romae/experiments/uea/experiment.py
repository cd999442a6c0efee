"""Running the experiment: one dataset's trainings (`run_dataset`) and the notebook's `run`."""

from __future__ import annotations

import dataclasses
import time

import pandas as pd

from ... import runtime
from ...compendium import cost, report, terminal
from ...config import as_list
from ...data import uea
from ...data.catalog import require
from ...compendium.kept import pretrain_finetune_kept
from ...recipe import DROP_PATH_RULE
from ...compendium.report import device_label, record, save_table

from .profiles import (
    EXPERIMENT, DROP_SEED, TABLE12, PAPER_STATS, UEARun, PROFILES, config, _pct, protocol, data_needs)
from .data import find, _classification, build, dry_raw, stats, labelled_subset
from .planning import classifier_args, plan, describe, measured_estimate
from .standard_baselines import baseline_scores, record_baselines
from .tables import DIFF_METRIC, TRIVIAL, scale_of, loss_curves, majority_error, differences, comparison_table


# ----------------------------------------------------------------------------- running

def run_dataset(name: str, cfg: UEARun, profile: str, root=None, cache_dir=None, refresh=False,
                log=print, raw: dict | None = None) -> dict:
    """Plan, then pre-train + fine-tune (and from scratch) every seed on one dataset -> per-seed rows and
    histories. Prints the dataset's size, the plan and its estimated time (reference CPU and here) first."""
    t0 = time.perf_counter()
    raw = uea.load(name, root) if raw is None else raw
    _classification(raw, name)
    st = stats(raw, cfg)
    full = PAPER_STATS[name] if raw.get("generated") and name in PAPER_STATS else stats(raw, PROFILES["paper"])
    cfg, reductions, ref_seconds = plan(cfg, name, st)
    log(describe(name, st, cfg, reductions, ref_seconds, profile))
    data = build(name, cfg, root, raw)
    here = None
    if not runtime.dry_run():  # a dry run's few steps: timing the full plan's batches would cost more than the run
        here, per = measured_estimate(name, data, cfg, st)
        log(f"    on this device, {device_label()}: " + ", ".join(f"{k} {v * 1000:.0f} ms/step" for k, v in per.items())
            + f" -> about {cost.minutes(here)} (if nothing is cached)")
    train, test = data["train"], data["test"]
    counts = train.tensors["labels"].bincount()
    for k in cfg.label_budgets:  # a budget at or over a class's size labels all of it: say so
        whole = [str(data["classes"][c]) for c in range(len(counts)) if 0 < counts[c] <= k]
        if whole:
            log(f"    {k} labelled per class: {', '.join(whole)} ha{'s' if len(whole) == 1 else 've'} no more than {k} "
                "training series, so all of "
                + ("it is" if len(whole) == 1 else "them are") + " labelled"
                + (" (the label-scarce pair equals the full one)" if len(whole) == len(data["classes"]) else ""))
    base = baseline_scores(data, cfg)
    log("    baselines on the same test series: " + ", ".join(
        f"{m}{'' if k == 'all labels' else f' ({k})'} {g.accuracy.mean():.4f}"
        for (m, k), g in base.groupby(["model", "labels"], sort=False)) + f" (accuracy; {base.seconds.sum():.1f} s)")
    key = dict(dataset=name, sha256=data["sha256"], drop=cfg.drop, drop_seed=DROP_SEED, standardize=cfg.standardize,
               max_series=cfg.max_series, max_length=cfg.max_length, max_tokens=cfg.max_tokens)
    if cfg.max_tokens is None:  # keys of runs from before thinning existed stay valid
        key.pop("max_tokens")
    model_cfg = cfg.model_config(train.token_dim)
    ft = cfg.finetune(name)
    variants = [("pre-trained", cfg.pretrain_config(len(train)))] + ([("from scratch", None)] if cfg.from_scratch else [])
    rows, histories = [], {}
    terminal.expect(len(cfg.seeds) * (1 + len(cfg.label_budgets)) * (len(variants) + 1), more=True)  # + pre-training
    for seed in cfg.seeds:
        for k in (None, *cfg.label_budgets):  # None: every training series is labelled
            labelled = train if k is None else labelled_subset(train, k, seed)
            for variant, pretrain in variants:
                res = pretrain_finetune_kept(
                    f"uea_{name}", labelled, test, model_cfg, finetune=cfg.finetune_config(name, len(labelled)),
                    pretrain=pretrain, n_outputs=len(data["classes"]), seed=seed, key=key, pretrain_data=train,
                    finetune_key=None if k is None else dict(labelled_ids=labelled.ids), **classifier_args(ft, cfg.dropout_at),
                    cache_dir=cache_dir, refresh=refresh, checkpoints=profile != "smoke", profile=profile)
                label = variant if k is None else f"{variant}, {k} labelled per class"
                rows.append(dict(dataset=name, variant=label, seed=seed, n_labelled=len(labelled), **res["metrics"],
                                 pretrain_steps=res["steps"]["pretrain"], finetune_steps=res["steps"]["finetune"],
                                 pretrain_seconds=res["seconds"]["pretrain"], finetune_seconds=res["seconds"]["finetune"]))
                histories[(label, seed)] = dict(pretrain=res["pretrain_history"], finetune=res["finetune_history"])
    return dict(name=name, data=data, per_seed=pd.DataFrame(rows), histories=histories, config=cfg, baselines=base,
                table12=name in TABLE12, seconds=time.perf_counter() - t0, reductions=reductions, stats=st,
                full_stats=full,
                estimate=dict(reference=ref_seconds, here=here),
                pretrain=cfg.pretrain_config(len(train)), finetune=cfg.finetune_config(name, len(train)))


def _note(r: dict, cfg: UEARun) -> str:
    d, pre, ft = r["data"], r["pretrain"], r["finetune"]
    capped = []
    if pre.epochs < cfg.pretrain_epochs:
        capped.append(f"pre-training {pre.epochs} of {cfg.pretrain_epochs} epochs")
    if ft.epochs < cfg.finetune(r["name"]).epochs:
        capped.append(f"fine-tuning {ft.epochs} of {cfg.finetune(r['name']).epochs} epochs")
    capped += [w for w in r.get("reductions", []) if not w.startswith(("pre-training", "no label-scarce"))]
    lam = cfg.finetune(r["name"]).drop_path
    return ((f"{runtime.DRY_LABEL} (generated series of {r['name']}'s shape); " if d["generated"] else "")
            + f"{len(d['train'])} train / {len(d['test'])} test series, {_pct(cfg.drop)} of steps dropped; "
            f"RoMAE-{cfg.encoder}; pre-training {pre.epochs} epochs, fine-tuning {ft.epochs} epochs "
            f"({'Table 12' if r['table12'] else 'DEFAULT_FINETUNE: not in Table 12'}); model after the last epoch, "
            f"no selection on the test file" + (f"; drop-path {lam:g} as {DROP_PATH_RULE}" if lam else "")
            + (f"; planned reductions: {', '.join(capped)}" if capped else ""))


def run(profile: str = "smoke", datasets=None, data_root=None, reports_dir=None, cache_dir=None,
        refresh: bool = False, log=print, **params) -> dict:
    """Run every dataset found (of `datasets`; default Table 6's five and every other one under the data
    root), record rows, save the table. `params`: the protocol parameters (`overrides`: drop, encoder,
    labels_per_class, dropout_at). Each dataset's protocol is said first (`protocol`). A dataset found that is not
    a classification dataset is skipped (said in `skipped`); DataMissing if none of `datasets` is there."""
    explicit = bool(as_list(datasets, "datasets"))
    cfg = config(profile, datasets, data_root, **params)
    shown = log

    def log(line):  # each line also goes to the terminal of `make reproduce` (romae.compendium.terminal): plans, estimates
        shown(line)
        terminal.say(line)

    generated = {}
    if runtime.dry_run():  # one seed, a few series per split; Table 6's datasets that are absent: generated
        cfg = dataclasses.replace(cfg, seeds=runtime.dry_seeds(cfg.seeds),
                                  max_series=runtime.dry_count(cfg.max_series or runtime.DRY_EVAL))
        generated = {d: dry_raw(d, cfg) for d in find(cfg.datasets, data_root)[1] if d in PAPER_STATS}
        for d in generated:
            log(f"{d}: not under the data root; {runtime.DRY_LABEL}")
    if not generated:
        require(data_needs(profile, list(cfg.datasets), data_root or ""), data_root)
    found, missing, message = find(cfg.datasets, data_root)
    if generated:
        found = [d for d in cfg.datasets if d in found or d in generated]
        missing = [d for d in missing if d not in generated]
        message = find(missing, data_root)[2]
    results, skipped = {}, {}
    for name in found:
        try:
            raw = generated[name] if name in generated else uea.load(name, data_root)
            _classification(raw, name)
        except ValueError as e:  # unreadable, or not classification (a regression dataset is not Table 6's)
            if explicit:
                raise
            skipped[name] = str(e)  # found by looking, not asked for: said, and the others still run
            log(f"{name}: skipped: {e}")
            continue
        log(protocol(name, cfg))
        r = results[name] = run_dataset(name, cfg, profile, data_root, cache_dir, refresh, log, raw)
        rc = r["config"]
        r["flags"] = {v: "; ".join(x for seed in g.seed for c in loss_curves(r["histories"][(v, seed)])
                                   if (x := report.loss_flags(c)))
                      for v, g in r["per_seed"].groupby("variant", sort=False)}
        diffs = differences(r)
        verdicts = {v: f"pre-trained minus from scratch ({DIFF_METRIC}, paired by seed): {d.text}"
                       + ("; no conclusion: a training of the pair is flagged" if d.flagged else "")
                    for d in diffs.itertuples() for v in (d.pre, d.scratch)}
        trivial = majority_error(r["data"])
        for variant in r["per_seed"].variant.unique():
            f = r["per_seed"][r["per_seed"].variant == variant]
            # settings: "<name>" (paper row), "<name>, from scratch", "<name>, 2 labelled per class, pre-trained", ...
            head, _, budget = variant.partition(", ")
            setting = ", ".join([name] + ([budget] if budget else []) + ([head] if head != "pre-trained" or budget else []))
            note = "; ".join(x for x in (_note(r, rc) + (f"; fine-tuned on {int(f.n_labelled.iloc[0])} labelled series"
                                                          if budget else ""), verdicts.get(variant, "")) if x)
            n = len(f)
            fields = r.setdefault("scales", {})[variant] = scale_of(r, variant, int(f.n_labelled.iloc[0]), n)
            losses = [c for seed in f.seed for c in loss_curves(r["histories"][(variant, seed)])]
            learned = report.learned(1 - float(f.accuracy.mean()), trivial, trivial=TRIVIAL)
            for metric in ("accuracy", "macro_f1"):
                record(EXPERIMENT, setting, metric, float(f[metric].mean()),
                       ours_std=float(f[metric].std(ddof=1)) if n > 1 else None, n_seeds=n, profile=profile,
                       scale=fields, note=note, learned=learned, losses=losses, reports_dir=reports_dir)
        record_baselines(r, profile, trivial, reports_dir)
    per_seed = pd.concat([r["per_seed"] for r in results.values()], ignore_index=True) if results else pd.DataFrame()
    base = pd.concat([r["baselines"].assign(dataset=name) for name, r in results.items()], ignore_index=True) \
        if results else pd.DataFrame()
    table = comparison_table(results, profile, cfg.encoder)
    if results:
        save_table(table, EXPERIMENT, reports_dir)
        save_table(per_seed, f"{EXPERIMENT}_per_seed", reports_dir)
    # found: the datasets that ran; skipped: found but not runnable ({name: why}); missing: named, not here
    return dict(config=cfg, found=list(results), missing=missing, message=message, results=results,
                per_seed=per_seed, baselines=base, table=table, skipped=skipped, profile=profile)
