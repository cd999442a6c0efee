"""The classifier's settings, the trainings a run plans, and the `quick` plan fitted to the reference CPU."""

from __future__ import annotations

import dataclasses
import math

import torch

from ...compendium import cost
from ...config import RoMAEConfig
from ...data import uea
from ...compendium.plan import Training
from ...model import RoMAEForPrediction, RoMAEForPreTraining, prediction_config

from .profiles import (
    QUICK_MINUTES, MIN_STEPS, THIN, EVAL_BATCH, Finetune, TABLE12, PAPER_STATS, UEARun, config, _pct)


def classifier_args(ft: Finetune, dropout_at: str = "authors") -> dict:
    """`pretrain_finetune`'s classifier settings of a Table 12 column: dropout, drop-path, label smoothing.
    Dropout where the authors' code puts it (attention, MLP output and the head's input), or with
    dropout_at="paper" where App. A.2 does (attention and the MLP's hidden layer; the head has none)."""
    paper = dropout_at == "paper"
    return dict(dropout=ft.dropout, drop_path=ft.drop_path, dropout_at=dropout_at,
                head_overrides=dict(label_smoothing=round(1.0 - ft.confidence, 6),
                                    head_dropout=0.0 if paper else ft.dropout))


def classifier_config(model_cfg: RoMAEConfig, ft: Finetune, n_classes: int, dropout_at: str = "authors") -> RoMAEConfig:
    """The classifier `pretrain_finetune` fine-tunes with `classifier_args(ft, dropout_at)`."""
    args = classifier_args(ft, dropout_at)
    return prediction_config(model_cfg, n_outputs=n_classes, dropout=args["dropout"], drop_path=args["drop_path"],
                             dropout_at=dropout_at, **args["head_overrides"])


def paper_trainings(datasets=uea.TABLE6) -> list[Training]:
    """Notebook 12's paper trainings (`romae.compendium.plan`) on `datasets` (sizes: PAPER_STATS): per dataset the
    pre-training and the fine-tunings (pre-trained and from scratch; all labels and the label-scarce budgets)."""
    cfg, out = config("paper", list(datasets)), []
    variants = 2 if cfg.from_scratch else 1
    for name in cfg.datasets:
        st = PAPER_STATS[name]
        n, model = st["n_train"], cfg.model_config(st["channels"])
        clf = classifier_config(model, cfg.finetune(name), st["classes"], cfg.dropout_at)
        shape = dict(n_tokens=st["max_len"], padded=st["min_len"] != st["max_len"], source="UEA archive, 30 % dropped")
        out += [Training(f"uea:{name} pre-training", "pretrain", model, cfg.pretrain_config(n), samples=n,
                              runs=len(cfg.seeds), **shape),
                Training(f"uea:{name} fine-tuning", "finetune", clf, cfg.finetune_config(name, n), samples=n,
                              runs=len(cfg.seeds) * variants, **shape)]
        for k in cfg.label_budgets:
            m = min(n, k * st["classes"])
            out.append(Training(f"uea:{name} fine-tuning, {k} labelled per class", "finetune", clf,
                                     cfg.finetune_config(name, m), samples=m, runs=len(cfg.seeds) * variants, **shape))
    return out


def _steps(epochs: int, n: int, batch: int) -> int:
    return epochs * -(-n // batch)


def schedule(cfg: UEARun, name: str, st: dict) -> dict:
    """The trainings of one seed under `cfg`: {"pretrain": steps, "finetune": [steps of each classifier
    fine-tuning, from-scratch and label-scarce included], "tokens": padded length, ...}."""
    n, tokens = st["n_train"], st["max_len"] if cfg.max_tokens is None else min(st["max_len"], cfg.max_tokens)
    pre = cfg.pretrain_config(n)
    ft_all = cfg.finetune_config(name, n)
    fts = [_steps(ft_all.epochs, n, ft_all.batch_size)] * (2 if cfg.from_scratch else 1)
    batches = [ft_all.batch_size] * len(fts)
    for k in cfg.label_budgets:
        m = min(n, k * st["classes"])
        c = cfg.finetune_config(name, m)
        fts += [_steps(c.epochs, m, c.batch_size)] * (2 if cfg.from_scratch else 1)
        batches += [c.batch_size] * (2 if cfg.from_scratch else 1)
    return dict(pretrain=_steps(pre.epochs, n, pre.batch_size), pretrain_batch=pre.batch_size, finetune=fts,
                finetune_batches=batches, tokens=tokens, predictions=len(fts) * -(-st["n_test"] // EVAL_BATCH))


def reference_seconds(cfg: UEARun, name: str, st: dict, speed: dict | None = None) -> float:
    """Seconds of all of a run's trainings and predictions on the reference CPU (romae.compendium.cost); `speed`
    {stage: this device's step time / the reference's} turns it into an estimate for another device."""
    sch = schedule(cfg, name, st)
    model = dataclasses.replace(cfg.model_config(st["channels"]), n_outputs=max(st["classes"], 1))
    f = lambda stage: (speed or {}).get(stage, 1.0)  # noqa: E731
    t = sch["pretrain"] * cost.reference_seconds(model, sch["pretrain_batch"], sch["tokens"], "pretrain") * f("pretrain")
    ft = cfg.finetune(name)
    regularised = cost.REGULARISED if (ft.dropout or ft.drop_path) and speed is None else 1.0  # (measured: in speed)
    t += sum(s * cost.reference_seconds(model, b, sch["tokens"], "finetune")
             for s, b in zip(sch["finetune"], sch["finetune_batches"])) * f("finetune") * regularised
    t += sch["predictions"] * cost.reference_seconds(model, min(EVAL_BATCH, st["n_test"]), sch["tokens"],
                                                     "predict") * f("predict")
    return len(cfg.seeds) * t


def _round_down(x: float) -> int:
    """Two significant digits, rounded down (so nearby budgets give the same cap)."""
    if x < 100:
        return max(1, int(x))
    p = 10 ** (int(math.log10(x)) - 1)
    return int(x // p * p)


def plan(cfg: UEARun, name: str, st: dict) -> tuple[UEARun, list[str], float]:
    """-> (the settings this dataset runs with, the reductions made, their seconds on the reference CPU).

    Only a dataset outside Table 12 with a `budget_minutes` (quick) is planned: the first of these that fits
    the budget is taken: the profile as it is; without the label-scarce pair; two seeds; two seeds with the
    trainings capped (never below MIN_STEPS or one epoch); one seed, capped; one seed, capped, long series
    thinned to 512, 256, 128 tokens. If none fits, the last, with a warning."""
    if cfg.budget_minutes is None or name in TABLE12:
        return cfg, [], reference_seconds(cfg, name, st)
    budget = cfg.budget_minutes * 60

    def capped(c: UEARun) -> UEARun | None:  # the largest common fraction of the steps that fits, or None
        uncapped = schedule(dataclasses.replace(c, max_steps=None), name, st)
        full = dict(pretrain=uncapped["pretrain"], finetune=max(uncapped["finetune"]))
        caps = {k: min(v, c.max_steps or v) for k, v in full.items()}
        lo, hi = 0.0, 1.0
        for _ in range(30):  # bisect the fraction
            mid = (lo + hi) / 2
            trial = dataclasses.replace(c, **{f"{k}_cap": _round_down(max(MIN_STEPS[k], mid * v)) for k, v in caps.items()})
            lo, hi = (mid, hi) if reference_seconds(trial, name, st) <= budget else (lo, mid)
        trial = dataclasses.replace(c, **{f"{k}_cap": _round_down(max(MIN_STEPS[k], lo * v)) for k, v in caps.items()})
        return trial if reference_seconds(trial, name, st) <= budget else None

    base = dataclasses.replace(cfg, budget_minutes=None)
    two, one = base.seeds[:2], base.seeds[:1]
    options = [(base, []), (dataclasses.replace(base, label_budgets=()), ["no label-scarce pair"]),
               (dataclasses.replace(base, label_budgets=(), seeds=two), ["no label-scarce pair", f"{len(two)} of "
                                                                          f"{len(base.seeds)} seeds"])]
    for seeds in (two, one):
        options.append((dataclasses.replace(base, label_budgets=(), seeds=seeds), ["no label-scarce pair",
                        f"{len(seeds)} of {len(base.seeds)} seeds", "capped"]))
    for tokens in THIN:
        if st["max_len"] > tokens:
            options.append((dataclasses.replace(base, label_budgets=(), seeds=one, max_tokens=tokens),
                            ["no label-scarce pair", f"1 of {len(base.seeds)} seeds", "capped",
                             f"series thinned to at most {tokens} of their up to {st['max_len']} kept steps"]))
    chosen = None
    for c, why in options:
        if "capped" in why:
            c = capped(c)
            if c is None:
                continue
        if reference_seconds(c, name, st) <= budget:
            chosen = (c, why)
            break
    if chosen is None:  # nothing fits: the smallest plan, at the minimal caps
        c, why = options[-1]
        c = dataclasses.replace(c, pretrain_cap=MIN_STEPS["pretrain"], finetune_cap=MIN_STEPS["finetune"])
        chosen = (c, why + [f"still over the {cfg.budget_minutes:g}-minute budget"])
    c, why = chosen
    return c, _describe(why, c, cfg, name, st), reference_seconds(c, name, st)


def _describe(why: list[str], c: UEARun, cfg: UEARun, name: str, st: dict) -> list[str]:
    """The reductions in words, with the step counts for 'capped'."""
    if "capped" not in why:
        return why
    full = schedule(dataclasses.replace(cfg, max_steps=None, budget_minutes=None), name, st)
    now = schedule(c, name, st)
    cap = (f"pre-training {now['pretrain']:,} of {full['pretrain']:,} steps, each fine-tuning "
           f"{max(now['finetune']):,} of {max(full['finetune']):,}")
    return [cap if w == "capped" else w for w in why]


def describe(name: str, st: dict, c: UEARun, reductions: list[str], seconds: float, profile: str) -> str:
    """One paragraph: the dataset's size, what the profile trains, its time on the reference CPU."""
    sch = schedule(c, name, st)
    lengths = f"{st['min_len']}-{st['max_len']}" if st["min_len"] != st["max_len"] else f"{st['max_len']}"
    trainings = (f"pre-training {sch['pretrain']:,} steps (batch {sch['pretrain_batch']}) + {len(sch['finetune'])} "
                 f"fine-tunings of {min(sch['finetune']):,}-{max(sch['finetune']):,} steps")
    return (f"{name}: {st['n_train']} train / {st['n_test']} test series, {st['channels']} channel(s), "
            f"{st['classes']} classes, {lengths} steps kept after the {_pct(c.drop)} drop"
            + (f" (thinned to at most {c.max_tokens})" if c.max_tokens and st["max_len"] > c.max_tokens else "")
            + f". {profile}: {len(c.seeds)} seed(s) x ({trainings})"
            + (f"; reduced to fit about {QUICK_MINUTES} min on 2 cores: {'; '.join(reductions)}" if reductions else "")
            + f". Estimated {cost.minutes(seconds)} on the reference {cost.REFERENCE} (if nothing is cached)")


def measured_estimate(name: str, data: dict, c: UEARun, st: dict) -> tuple[float, dict]:
    """Seconds the plan will take on this device -> (seconds, {stage: measured seconds per step}): one step of
    each stage is timed with the real models on a real batch (`romae.compendium.cost.measured_step_seconds`), and the
    plan's reference cost is scaled by the measured / reference ratio of each stage."""
    train, test = data["train"], data["test"]
    sch = schedule(c, name, st)
    model_cfg = c.model_config(train.token_dim)
    ref_cfg = dataclasses.replace(model_cfg, n_outputs=max(st["classes"], 1))
    pb, fb = min(sch["pretrain_batch"], len(train)), min(max(sch["finetune_batches"]), len(train))
    eb = min(EVAL_BATCH, len(test))
    # the classifier as fine-tuned: its dropout and drop-path cost time too
    clf = RoMAEForPrediction(classifier_config(model_cfg, c.finetune(name), len(data["classes"]), c.dropout_at))
    per = {"pretrain": cost.measured_step_seconds(RoMAEForPreTraining(model_cfg), train.batch(torch.arange(pb)),
                                                  c.pretrain_config(len(train))),
           "finetune": cost.measured_step_seconds(clf, train.batch(torch.arange(fb)), c.finetune_config(name, len(train))),
           "predict": cost.measured_step_seconds(clf, test.batch(torch.arange(eb)), None)}
    tokens = train.tensors["values"].shape[1]
    speed = {stage: per[stage] / cost.reference_seconds(ref_cfg, b, tokens, stage)
             for stage, b in (("pretrain", pb), ("finetune", fb), ("predict", eb))}
    return reference_seconds(c, name, st, speed), per
