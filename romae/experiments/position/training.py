"""One training of Table 1 or Fig. 2, cached, and the predictions it is scored on."""

from __future__ import annotations

import time

import torch

from ...compendium import plan, terminal
from ... import runtime
from ...compendium.kept import kept
from ...config import RoMAEConfig, TrainConfig
from ...data.position import position_grid, position_samples
from ...model import RoMAEForPrediction
from ...train import ArrayDataset, fit

from .profiles import SizeRun, Table1Config, Fig2Config


# ----------------------------------------------------------------------------- training and evaluation

@torch.no_grad()
def predict(model: RoMAEForPrediction, data: dict, batch: int = 1000) -> torch.Tensor:
    """Predicted positions [n, N] for data {values, positions} (on the model's device, returned on CPU)."""
    model.eval()
    dev = next(model.parameters()).device
    out = [model(values=data["values"][i:i + batch].to(dev), positions=data["positions"][i:i + batch].to(dev))[0]
           for i in range(0, len(data["values"]), batch)]
    return torch.cat(out).squeeze(-1).float().cpu()


def per_sample_mse(pred: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """pred [n, N], labels [n, N, 1] or [n, N] -> the MSE of each sample over its tokens, [n] (float64)."""
    return (pred.double() - labels.reshape(pred.shape).double()).pow(2).mean(dim=1)


def _train(model_cfg: RoMAEConfig, train_cfg: TrainConfig, train: dict, test: dict, device=None, profile: str = ""):
    torch.manual_seed(train_cfg.seed)  # model initialisation (fit re-seeds for the batch order)
    model = RoMAEForPrediction(model_cfg)
    train_cfg = plan.fit_memory(train_cfg, model_cfg, train["values"].shape[1], "finetune", profile)  # paper: micro-batch
    t0 = time.perf_counter()
    res = fit(model, ArrayDataset(**train), train_cfg, val_data=ArrayDataset(**test), config=model_cfg,
              device=device, on_progress=terminal.Progress())
    return res, time.perf_counter() - t0


def _kept(name: str, label: str, key: dict, compute, cache_dir, refresh: bool, planned: float | None) -> dict:
    """`kept(name, key, compute)`: a training kept in the committed record of a paper run (`romae.compendium.trainings`),
    and told in the terminal as `label` (trained, with the plan's seconds, or already done)."""
    computed = []

    def train():
        computed.append(True)
        with terminal.named(label, planned):
            return compute()

    # keyed by what this module runs (its profiles, the data generator, the model and the loop), not the callers'
    result = kept(name, key, train, cache_dir=cache_dir, refresh=refresh, planned=planned,
                  roots=["experiments/position/training.py:"])
    if not computed:
        terminal.cached(label, planned)
    return result


def _planned(model_cfg: RoMAEConfig, train_cfg: TrainConfig, n_tokens: int, samples: int) -> float | None:
    """The plan's seconds for a run that is kept in the committed record of trainings (else not needed: None)."""
    from ...compendium import trainings

    if trainings.open_folder() is None or runtime.dry_run():
        return None
    return plan.training_seconds("finetune", model_cfg, train_cfg, n_tokens=n_tokens, samples=samples)


def _key(model_cfg: RoMAEConfig, train_cfg: TrainConfig, **data) -> dict:
    key = dict(model=model_cfg.to_dict(), train=train_cfg.to_dict(), data=data)
    key["train"].pop("progress")  # the progress bar does not change the result
    return key


def train_table1_run(cfg: Table1Config, run: SizeRun, use_cls: bool, seed: int, cache_dir=None,
                     refresh: bool = False, progress: bool = False, device=None, profile: str = "") -> dict:
    """One Table 1 run (cached) -> {mse, per_sample_mse [n_test], history, steps, seconds}."""
    model_cfg, train_cfg = cfg.model_config(run, use_cls), cfg.train_config(run, seed, progress)
    data = dict(n_tokens=cfg.n_tokens, low=cfg.low, high=cfg.high, n_train=run.n_train, n_test=run.n_test,
                train_seed=cfg.train_seed, test_seed=cfg.test_seed)

    def compute():
        train = position_samples(run.n_train, cfg.n_tokens, cfg.low, cfg.high, cfg.train_seed)
        test = position_samples(runtime.dry_count(run.n_test), cfg.n_tokens, cfg.low, cfg.high, cfg.test_seed)
        res, seconds = _train(model_cfg, train_cfg, train, test, device, profile)
        mse = per_sample_mse(predict(res.model, test, cfg.eval_batch), test["labels"])
        return dict(mse=float(mse.mean()), per_sample_mse=mse.numpy(), history=res.history, steps=res.steps,
                    seconds=seconds)

    return _kept("position_table1", f"table1 {run.size}, {'with' if use_cls else 'no'} [CLS], seed {seed}",
                 _key(model_cfg, train_cfg, **data), compute, cache_dir, refresh,
                 _planned(model_cfg, train_cfg, cfg.n_tokens, run.n_train))


def train_fig2_run(cfg: Fig2Config, low: float, high: float, lr: float, seed: int, cache_dir=None,
                   refresh: bool = False, progress: bool = False, device=None, profile: str = "") -> dict:
    """One App. B.1 run (cached) -> {positions [n_eval], pred [n_eval], abs_error [n_eval], test_mse,
    history, steps, seconds}."""
    model_cfg, train_cfg = cfg.model_config(), cfg.train_config(lr, seed, progress)
    data = dict(low=low, high=high, n_train=cfg.n_train, n_test=cfg.n_test, n_eval=cfg.n_eval,
                train_seed=cfg.train_seed, test_seed=cfg.test_seed)

    def compute():
        train = position_samples(cfg.n_train, 1, low, high, cfg.train_seed)
        test = position_samples(runtime.dry_count(cfg.n_test), 1, low, high, cfg.test_seed)  # dry run: capped
        res, seconds = _train(model_cfg, train_cfg, train, test, device, profile)
        grid = position_grid(low, high, cfg.n_eval)
        pred = predict(res.model, grid)[:, 0]
        positions = grid["positions"].flatten()
        test_mse = per_sample_mse(predict(res.model, test), test["labels"]).mean()
        return dict(positions=positions.numpy(), pred=pred.numpy(), abs_error=(pred - positions).abs().numpy(),
                    test_mse=float(test_mse), history=res.history, steps=res.steps, seconds=seconds)

    return _kept("position_fig2", f"fig2 U({low:g}, {high:g}), lr {lr:g}, seed {seed}", _key(model_cfg, train_cfg, **data),
                 compute, cache_dir, refresh, _planned(model_cfg, train_cfg, 1, cfg.n_train))
