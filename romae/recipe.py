"""The one pre-train -> fine-tune -> evaluate recipe that every classification experiment calls.

    res = pretrain_finetune("uea_BasicMotions", train, test, model_cfg, pretrain=TrainConfig(...),
                            finetune=TrainConfig(...), n_outputs=4, seed=69)
    res["metrics"]  # {"accuracy": ..., "macro_f1": ...} on `test`

1. Pre-train a `RoMAEForPreTraining(model_cfg)` as a masked autoencoder on the training samples
   (labels unused), unless `pretrain=None` (the from-scratch control).
2. Build the classifier with the same positional set-up and encoder (`prediction_config`), copy the
   pre-trained encoder blocks and [CLS] into it (the patch embedding is re-initialised, as the authors
   did), and fine-tune it on the labelled training samples.
3. Predict the test samples with the model after the last epoch (no selection on the test set) and
   score them.

Here both trainings run in memory with `fit`. The compendium's version (`romae.compendium.kept.pretrain_finetune_kept`,
what the experiments call) passes a `trainer` and an `evaluator` that keep their results (the results cache and the
committed record of trainings), so a re-run loads them instead of retraining; the fine-tuning's key then names
the pre-training's, so a changed pre-training retrains the classifier. A modality module only builds its data and
chooses the configs from the paper's tables.
"""

from __future__ import annotations

import dataclasses
import time

import torch

from .config import RoMAEConfig, TrainConfig
from .metrics import resolve_metrics
from .model import RoMAEForPrediction, RoMAEForPreTraining, prediction_config
from .train import ArrayDataset, fit, predict

# stochastic depth as `romae.model.Encoder` applies it, for rows' notes: the authors' schedule (what trained the
# paper's numbers), not App. A.2's; block l = 0..N-1, so the first is never dropped and the last at lambda
DROP_PATH_RULE = "lambda*l/(N-1) over blocks l = 0..N-1 (authors' code; App. A.2 writes lambda*m/N)"


def train_in_memory(name: str, model_cls, model_cfg, data, cfg: TrainConfig, key: dict, *, seed: int,
                    pretrained=None, need_weights: bool = False, **fit_kwargs) -> dict:
    """`pretrain_finetune`'s default trainer: `fit` a fresh `model_cls(model_cfg)` (initialised from `seed`, its
    encoder from `pretrained` weights or a function giving them) -> {state_dict, history, steps, seconds, run_id}."""
    torch.manual_seed(seed)
    model = model_cls(model_cfg)
    if pretrained is not None:
        model.load_encoder(pretrained() if callable(pretrained) else pretrained)
    t0 = time.perf_counter()
    res = fit(model, ArrayDataset(**data) if isinstance(data, dict) else data, cfg, config=model_cfg, **fit_kwargs)
    times = [r["seconds"] for r in res.history if "seconds" in r]
    return dict(state_dict={k: v.detach().cpu() for k, v in res.model.state_dict().items()}, history=res.history,
                steps=res.steps, seconds=float(times[-1]) if times else time.perf_counter() - t0, run_id=name)


def evaluate_now(name: str, key: dict, compute):
    """`pretrain_finetune`'s default evaluator: compute() at once (the compendium's keeps the result)."""
    return compute()


def pretrain_finetune(name: str, train, test, model: RoMAEConfig, *, finetune: TrainConfig,
                      pretrain: TrainConfig | None, n_outputs: int, seed: int, key: dict | None = None,
                      dropout: float | None = None, drop_path: float | None = None, dropout_at: str | None = None,
                      head_overrides: dict | None = None,
                      metrics=("accuracy", "macro_f1"), val_data=None, eval_batch: int = 256,
                      pretrain_data=None, finetune_key: dict | None = None,
                      trainer=train_in_memory, evaluator=evaluate_now, test_key: dict | None = None) -> dict:
    """Pre-train (or not), fine-tune, evaluate on `test` -> dict.

    train, test: datasets with values, positions, (pad_mask), labels (e.g. a `TokenDataset`).
    model: the pre-training config (encoder, decoder, positions, mask_ratio). finetune / pretrain: the
    two TrainConfigs (pretrain=None: the same classifier trained from scratch). dropout / drop_path /
    dropout_at: the classifier's encoder (EncoderConfig); head_overrides: other classifier fields (head, label_smoothing,
    head_dropout, task). key: names the data for a keeping trainer. val_data: optional held-out data whose loss
    and metrics are logged during fine-tuning (never used to pick a model). pretrain_data: pre-train on
    other (e.g. more, unlabelled) samples than the classifier is fine-tuned on; `key` then names the
    pre-training data and `finetune_key` what differs for fine-tuning (e.g. the labelled subset).
    trainer(name, model_cls, model_cfg, data, train_cfg, key, seed=, pretrained=, need_weights=, **fit_kwargs) -> dict
    with history, steps, seconds, run_id and (unless it kept none) state_dict; evaluator(name, key, compute) -> the
    evaluation (test_key: what names the test data in its key). Defaults: train in memory, evaluate at once.
    Returns {metrics, outputs (test logits), model (fine-tuned, eval mode; None when its weights were not kept:
    a committed paper run), pretrained_state (the MAE's state dict; None without pre-training or when not kept),
    pretrain_history, finetune_history, seconds: {pretrain, finetune}}.
    """
    key = dict(key or {})
    metric_fns = resolve_metrics(metrics)
    t0 = time.perf_counter()
    pre = None
    ft_cfg = prediction_config(model, n_outputs=n_outputs, dropout=dropout, drop_path=drop_path, dropout_at=dropout_at,
                               **(head_overrides or {}))
    pre_data = train if pretrain_data is None else pretrain_data

    def pretrained(need_weights: bool = False):
        return trainer(f"{name}_pretrain", RoMAEForPreTraining, model, pre_data, dataclasses.replace(pretrain, seed=seed),
                       key, seed=seed, need_weights=need_weights)

    if pretrain is not None:  # the seed drives initialisation, data order and masks of both stages
        pre = pretrained()  # kept without its weights (a committed paper run): they are fetched only to fine-tune
    ft_key = dict(key, **(finetune_key or {}), pretrained=None if pre is None else pre["run_id"])

    def fine_tune(need_weights: bool = False):
        weights = None if pre is None else \
            (lambda: pre["state_dict"] if "state_dict" in pre else pretrained(need_weights=True)["state_dict"])
        return trainer(f"{name}_finetune", RoMAEForPrediction, ft_cfg, train, dataclasses.replace(finetune, seed=seed),
                       ft_key, seed=seed, pretrained=weights, val_data=val_data,
                       metrics=metric_fns if val_data is not None else (), need_weights=need_weights)

    ft = fine_tune()
    t2 = time.perf_counter()
    labels = test.tensors["labels"] if hasattr(test, "tensors") else getattr(test, "labels", None)
    labels = test["labels"] if labels is None else labels
    clf = None

    def evaluate():
        nonlocal clf
        clf = _classifier(ft_cfg, ft if "state_dict" in ft else fine_tune(need_weights=True), seed)
        outputs = predict(clf, test, batch_size=eval_batch)
        return dict(outputs=outputs, metrics={name_: float(fn(labels, outputs)) for name_, fn in metric_fns.items()})

    # the test set's predictions are kept with the trainings, so a committed run needs no weights to report
    ev = evaluator(f"{name}_test", dict(model=ft["run_id"], **(test_key or {}), n_test=len(test),
                                        metrics=sorted(metric_fns)), evaluate)
    if clf is None and "state_dict" in ft:
        clf = _classifier(ft_cfg, ft, seed)
    return dict(metrics=ev["metrics"], outputs=ev["outputs"], model=clf, config=ft_cfg,
                pretrained_state=None if pre is None else pre.get("state_dict"),
                pretrain_history=None if pre is None else pre["history"], finetune_history=ft["history"],
                seconds=dict(pretrain=None if pre is None else pre["seconds"], finetune=ft["seconds"],
                             evaluate=time.perf_counter() - t2, wall=time.perf_counter() - t0),
                steps=dict(pretrain=None if pre is None else pre["steps"], finetune=ft["steps"]))


def _classifier(cfg, trained: dict, seed: int) -> RoMAEForPrediction:
    clf = RoMAEForPrediction(cfg, seed=seed)  # its weights are replaced: the seed only spares the global generator
    clf.load_state_dict(trained["state_dict"])
    return clf.eval()


def plot_learning_curves(runs, *, pretrain_ylabel: str, finetune_ylabel: str, yscale=("linear", "linear"),
                         titles=("pre-training", "fine-tuning"), legend_size: int = 7):
    """Two panels, pre-training loss and fine-tuning loss against step, one line per run.

    runs: dicts {pretrain: history rows or None, finetune: history rows, pretrain_label, finetune_label,
    color (optional, of the fine-tuning line)}, e.g. from `pretrain_finetune`'s pretrain_history and
    finetune_history. yscale: of the two panels.
    """
    import matplotlib.pyplot as plt
    import pandas as pd

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 3.6))
    for r in runs:
        if r["pretrain"]:
            p = pd.DataFrame(r["pretrain"]).dropna(subset=["loss"])
            a.plot(p.step, p.loss, label=r["pretrain_label"])
        f = pd.DataFrame(r["finetune"]).dropna(subset=["loss"])
        b.plot(f.step, f.loss, color=r.get("color"), alpha=0.8, label=r["finetune_label"])
    a.set(xlabel="step", ylabel=pretrain_ylabel, yscale=yscale[0], title=titles[0])
    b.set(xlabel="step", ylabel=finetune_ylabel, yscale=yscale[1], title=titles[1])
    for ax in (a, b):
        ax.legend(fontsize=legend_size)
    fig.tight_layout()
    return fig


__all__ = ["DROP_PATH_RULE", "evaluate_now", "pretrain_finetune", "plot_learning_curves", "train_in_memory"]
