"""One training loop for every experiment: `fit(model, data, TrainConfig)`.

The model's forward takes a batch's tensors as keywords and returns `(output, loss)`; the loop adds
AdamW/SGD with one parameter group, linear warm-up + cosine decay stepped per optimiser step,
optional gradient-norm clipping, bf16 autocast and several processes through Accelerate (so
`accelerate launch` works unchanged), atomic checkpoints, exact resume, a JSON-lines history and a
tqdm bar. Data is a map-style dataset; we shuffle and shard it ourselves, so no DataLoader workers
and no sampler state need saving.

Resume is exact on CPU: training N steps in one go, or k steps (`max_steps=k`) and then the rest
from the checkpoint, gives identical weights, dropout and in-forward random masking included,
because the RNG states are saved and each epoch's order is a function of (seed, epoch) alone.

An out_dir is guarded: one fit at a time (an flock on out_dir/.lock), resume refuses a changed
configuration or other data unless told, checkpoints carry sha256 sums of their files, and the checkpoint
before the last is kept as checkpoint.prev/ while a run is unfinished, to resume from if checkpoint/ is
corrupted.

This module is the loop (steps, gradient accumulation, deferred checks, evaluation, `predict`); `romae.optim`
the optimiser and its schedule; `romae.feeding` brings the batches (datasets, order, sharding, feeding a device) and
`romae.checkpoint` saves and resumes (checkpoints, RNG states, the lock, history and configuration checks).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import random
import time
import warnings
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState
from accelerate.utils import broadcast_object_list
from torch.optim.lr_scheduler import LambdaLR

from romae.config import TrainConfig, check_whole
from romae import checkpoint, feeding, precheck, runtime
from romae.progress import bar as progress_bar  # `progress` is predict's argument
from romae.optim import _lr_factor, apply_settings, lr_at, make_optimizer
from romae.optim import _make_optimizer  # noqa: F401 (older code imports it from here)
from romae import engine
from romae.engine import _naming_samples
from romae.checkpoint import load_checkpoint, load_state, read_config
from romae.feeding import ArrayDataset


@dataclass
class FitResult:
    """What `fit` returns. History rows: training {step, epoch, lr, loss, grad_norm, seconds}, loss and
    grad_norm averaged over the steps since the previous row; validation {step, epoch, val_loss}."""

    model: torch.nn.Module  # unwrapped (no DDP, no autocast wrapper), on the training device
    history: list[dict]  # in the order written to history.jsonl
    steps: int  # optimiser steps done in total (across resumes)
    out_dir: Path | None
    paused: str | None = None  # why it stopped cleanly before its end ("time budget", "SIGTERM"), else None

    @property
    def complete(self) -> bool:
        """Whether it trained to its end (or to max_steps): not paused."""
        return self.paused is None

    def frame(self):
        """The history as a pandas DataFrame (validation rows have NaN training columns and vice versa)."""
        import pandas as pd

        return pd.DataFrame(self.history)


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device


@contextlib.contextmanager
def _matmul_precision(precision: str):
    """TF32 matrix products for the `with` block when precision is "tf32" (a named deviation: FP32 inputs,
    10-bit mantissa products on Ampere and later GPUs); the previous settings are restored after."""
    saved = (torch.get_float32_matmul_precision(), torch.backends.cuda.matmul.allow_tf32,
             torch.backends.cudnn.allow_tf32)
    if precision == "tf32":
        torch.set_float32_matmul_precision("high")
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(saved[0])
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[1:]


def _on_main(accelerator, fn):
    """fn() on the main process only; every process returns its result or raises its exception, so a
    failure there does not leave the others waiting at the next collective."""
    result, error = None, None
    if accelerator.is_main_process:
        try:
            result = fn()
        except Exception as e:  # raised below, on every process
            error = e
    if accelerator.num_processes > 1:
        result, error = broadcast_object_list([result, error])
    if error is not None:
        raise error
    return result


def _original_units(out: torch.Tensor, scaler) -> torch.Tensor:
    """Regression outputs [..., k] in standardised units -> out * std + mean (in float64, returned float32), with
    the training statistics of the targets (`TokenDataset.target_standardizer`: one per target, or one for all)."""
    mean = torch.as_tensor(np.asarray(scaler.mean, dtype=np.float64).reshape(-1))
    std = torch.as_tensor(np.asarray(scaler.std, dtype=np.float64).reshape(-1))
    if mean.numel() != 1 and out.shape[-1] != mean.numel():
        raise ValueError(f"the model has {out.shape[-1]} outputs, but the data's targets were standardised as "
                         f"{mean.numel()} (data.target_standardizer); pass original_units=False for the raw outputs")
    return (out.double() * std + mean).float()


@torch.no_grad()
def predict(model: torch.nn.Module, data, batch_size: int = 256, device: str | torch.device | None = None,
            progress: bool | None = None, *, as_labels: bool = False, classes=None, original_units: bool = True):
    """Outputs of `model` on every sample of `data`, in order, on the CPU: e.g. logits [n, n_classes].

    Eval mode (no dropout), no gradients, batched; only the keys the model takes are passed (labels are
    not needed), with padding masks. `device`: where to run (default: the model's). The model's mode is
    restored afterwards. A progress bar shows for more than 20 batches unless `progress=False`.

    `data`: a dataset, or a dict of tensors {values, positions, pad_mask, ...} sharing their first dimension.
    `as_labels=True` (classifiers): the predicted classes by name instead, a numpy array [n] (or [n, N] for
    per-token outputs) of the names the builder saw, `data.classes` (e.g. a TokenDataset from
    `from_sequences`), or of `classes=` when the data has none.

    Data built with standardised regression targets (`from_sequences(..., standardize_targets=True)`, or
    `from_long`; the dataset's `target_standardizer`) gets its outputs back in the targets' original units,
    out * std + mean with the training statistics, unless `original_units=False` (the model's raw outputs).
    """
    if isinstance(data, dict):  # a batch of tensors {values, positions, ...}: a dataset of it
        data = ArrayDataset(**data)
    if isinstance(data, (list, tuple, str)) or not hasattr(data, "__len__") or not (
            hasattr(data, "batch") or hasattr(data, "__getitem__")):
        raise TypeError(f"predict takes a dataset (e.g. the TokenDataset of romae.from_sequences, an ArrayDataset, a "
                        f"GridDataset) or a dict of tensors, got {type(data).__name__}; wrap tensors as "
                        "romae.ArrayDataset(values=..., positions=...)")
    if len(data) == 0:
        raise ValueError("predict: the dataset is empty")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    names = None
    if as_labels:
        cfg = getattr(model, "cfg", None)
        if cfg is not None and getattr(cfg, "task", "classification") != "classification":
            raise ValueError(f"as_labels=True needs a classifier; this model's task is {cfg.task!r}")
        names = classes if classes is not None else getattr(data, "classes", None)
        if names is None:
            raise ValueError("as_labels=True: the data has no class names (.classes); pass classes=[...]")
        names = list(names)
    dev = torch.device(device) if device is not None else next(model.parameters()).device
    was_training = model.training
    model.to(dev).eval()
    n_batches = math.ceil(len(data) / batch_size)
    show = n_batches > 20 if progress is None else progress
    outs = []
    try:
        for idx, batch in progress_bar(feeding.batches(data, batch_size), total=n_batches, disable=not show,
                                       desc="predict"):
            batch = feeding.to_device({k: v for k, v in feeding.model_keys(model, batch).items() if k != "labels"}, dev)
            with _naming_samples(data, idx, "the data"):
                outs.append(model(**batch)[0].float().cpu())
    finally:
        model.train(was_training)
    out = torch.cat(outs)
    targets = getattr(data, "target_standardizer", None)
    if names is None:
        return _original_units(out, targets) if targets is not None and original_units else out
    if out.shape[-1] != len(names):
        raise ValueError(f"the model has {out.shape[-1]} outputs but {len(names)} class names were given")
    table = np.empty(len(names), dtype=object)
    table[:] = names
    picked = table[out.argmax(-1).numpy()]
    return picked.astype(str) if all(isinstance(n, str) for n in names) else picked


def fit(model: torch.nn.Module, train_data, cfg: TrainConfig, *, val_data=None,
        out_dir: str | Path | None = None, resume: bool = True, config: dict | None = None,
        callback=None, device: str | None = None, max_steps: int | None = None,
        metrics=(), allow_config_change: bool = False, transform=None, on_progress=None,
        time_budget: float | None = None) -> FitResult:
    """Train `model` on `train_data` as `cfg` says; checkpoints, history.jsonl go to `out_dir`.

    `model(**batch)` -> (output, loss: scalar). Steps per epoch = ceil(len / (batch_size * processes));
    the schedule always spans steps_per_epoch * epochs: `max_steps` only stops early (and checkpoints
    there), so a stopped run resumed later equals an uninterrupted one. With `resume` and an existing
    `out_dir/checkpoint`, training continues from it (or returns at once if it is already done).
    `config` (the model's resolved config; default: `model.cfg` when the model has one) is saved in
    config.json; `callback(row, model)` sees each
    validation row on the main process. `device="cpu"` forces the CPU; None lets Accelerate choose.
    `metrics`: names from `romae.metrics.METRICS` ("accuracy", "macro_f1", "mse") or {name: fn(y_true,
    y_pred)}; each validation row then holds them beside val_loss (val_data needs labels).
    `transform(batch) -> batch` is applied to every training batch before it goes to the device (e.g.
    `romae.masking.trim_padding`, a masking protocol, augmentation); its random draws come from torch's
    global generator, whose state checkpoints save, so a resumed run draws what an uninterrupted one would.
    `on_progress(event, step, stop)`: called on the main process with "start" (the first step to run; > 0 when
    resumed), "step" after each optimiser step and "end" when training stops ("paused" when it stopped cleanly
    before `stop`, see below), `stop` being the last step this call would run (e.g. the terminal lines of `make reproduce`, `romae.compendium.terminal.Progress`). fit itself prints
    nothing but its tqdm bar (cfg.progress) and reads no environment variable: the device, precision and dry run
    come from `romae.runtime.current()`, the process's settings (defaults unless a caller set them).

    Stopping cleanly (a run with an out_dir): after `time_budget` seconds at the latest, or by the process's deadline
    (`romae.runtime.current().deadline`, a `make reproduce TIME_BUDGET=`), or when asked (SIGTERM or SIGUSR1 while it
    trains, `romae.runtime.request_stop`, the runtime's stop file), fit ends at the step boundary that leaves time to
    write its checkpoint, and returns a result with `paused` saying why (`complete` False). The same call continues it;
    pieces give what one uninterrupted run gives, as with max_steps.

    One fit at a time may use an out_dir (another raises RuntimeError). Resuming refuses (ValueError) a
    `cfg` or `config` other than the checkpoint's, cfg.progress and cfg.log_every aside, unless
    `allow_config_change`: then training goes on under the new settings (lr, schedule, betas, weight decay,
    clipping; another optimizer is refused) and a {"event": "config_changed"} history row records them. A corrupted
    checkpoint/ is set aside with a warning and checkpoint.prev/ resumed instead, when that one is good.

    A RoMAE model that cannot train on `train_data` is refused before its first step, naming the value to use
    (`romae.precheck.before_fit`: a classifier with fewer outputs than the data's classes, e.g. n_outputs=1, the
    default; a regressor on classes; another token_dim or n_axes than the data's tokens). With `cfg.progress`, a bar
    on a terminal, and a plain line every 5 % of the run (or every minute) where stderr is a log, a notebook's stream
    or a pipe (`romae.progress`).

    If fit fails or is interrupted, `model` is given back as it came (its weights, device and mode): what was
    learnt until then is in out_dir's checkpoint, if any, never half in the caller's model.
    """
    if not isinstance(cfg, TrainConfig):
        raise TypeError(f"fit: cfg must be a romae.TrainConfig, got {type(cfg).__name__}")
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"fit: model must be a torch.nn.Module, got {type(model).__name__}")
    max_steps = check_whole("fit", "max_steps", max_steps, 0, none=True)
    if time_budget is not None:
        if isinstance(time_budget, bool) or not isinstance(time_budget, (int, float)) or not time_budget > 0:
            raise ValueError(f"fit: time_budget must be a number of seconds > 0, got {time_budget!r}")
        if out_dir is None:
            raise ValueError(f"fit: time_budget={time_budget} needs an out_dir: a training stopped by its budget is "
                             "continued from the checkpoint it leaves there")
    deadline = None if time_budget is None else time.time() + time_budget  # counted from here, setup included
    before = _snapshot(model)
    try:
        return _fit(model, train_data, cfg, val_data=val_data, out_dir=out_dir, resume=resume, config=config,
                    callback=callback, device=device, max_steps=max_steps, metrics=metrics,
                    allow_config_change=allow_config_change, transform=transform, on_progress=on_progress,
                    deadline=deadline)
    except BaseException:
        _restore(model, before)
        raise


def _snapshot(model: torch.nn.Module) -> dict:
    """What `_restore` needs to give `model` back as it is now: a CPU copy of its state, device and mode."""
    first = next(iter(model.parameters()), None)
    return {"state": {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()},
            "device": first.device if first is not None else None, "training": model.training}


def _restore(model: torch.nn.Module, before: dict) -> None:
    with torch.no_grad():
        model.load_state_dict(before["state"])
    if before["device"] is not None:
        model.to(before["device"])
    model.train(before["training"])


def _fit(model, train_data, cfg: TrainConfig, *, val_data, out_dir, resume, config, callback, device, max_steps,
         metrics, allow_config_change, transform, on_progress, deadline=None) -> FitResult:
    """fit's phases: set up (`_setup`), lock the out_dir, resume (`_resume`), the epochs (`engine.train_one_epoch`),
    the end (`engine.finish`)."""
    run = _setup(model, train_data, cfg, val_data=val_data, out_dir=out_dir, config=config, callback=callback,
                 device=device, max_steps=max_steps, metrics=metrics, transform=transform)
    if deadline is not None:  # fit's own budget, or the process's deadline, whichever comes first
        run.deadline = min(run.deadline or math.inf, deadline)
    with contextlib.ExitStack() as held:  # out_dir's lock, released when fit ends, however it ends
        held.enter_context(_matmul_precision(run.precision))
        if run.out is not None:  # a signal stops it cleanly: its checkpoint continues it
            held.enter_context(runtime.stopping_on_signals())
        if run.out is not None:
            _on_main(run.accelerator, lambda: held.enter_context(checkpoint.lock(run.out)))
            _on_main(run.accelerator, lambda: checkpoint.repair_swap(run.ckpt))
        run.fingerprint = feeding.data_fingerprint(train_data) if run.out is not None else None  # checked on resume
        rng, resumed = _resume(run, resume, allow_config_change)
        if run.hist_path is not None and run.main:
            run.hist_path.write_text("".join(json.dumps(r) + "\n" for r in run.history))
        if run.step >= run.stop:
            return _result(run)
        run.paused = engine.pause_due(run)  # the budget spent, or a stop asked, before a step: nothing to save
        if run.paused is not None:
            return _result(run)
        if rng is not None:
            checkpoint.set_rng_state(rng)  # last, so nothing between here and the first batch draws from the RNGs
        # The checkpoint a save replaces is kept as prev only if it is this run's own: not on a fresh start
        # (it would be another run's), nor at the end (a finished run is not continued, nor falls back).
        run.keep_prev = resumed
        engine.start(run, held, on_progress, compile_model)
        epoch = run.step // run.steps_per_epoch
        while run.step < run.stop and run.paused is None:
            engine.train_one_epoch(run, epoch)
            epoch += 1
        engine.finish(run)
        return _result(run)


def _result(run) -> FitResult:
    return FitResult(run.accelerator.unwrap_model(run.model, keep_fp32_wrapper=False), run.history, run.step, run.out,
                     run.paused)


def _setup(model, train_data, cfg: TrainConfig, *, val_data, out_dir, config, callback, device, max_steps, metrics,
           transform) -> engine.Run:
    """Check the inputs; the accelerator, precision and seeds this process trains with (`romae.runtime.current`:
    device, precision, dry run); the schedule's sizes; the optimiser and scheduler; the model prepared."""
    from .metrics import resolve_metrics  # metrics imports nothing from here

    precheck.before_fit(model, train_data, transform)  # n_outputs, token_dim, ... against the data: refused now
    metric_fns = resolve_metrics(metrics)
    if metric_fns and val_data is None:
        raise ValueError(f"metrics {list(metric_fns)} are computed on validation data: pass val_data=")
    if len(train_data) == 0:
        raise ValueError("fit: the training dataset is empty")
    rt = runtime.current()  # what this process was asked for: device, precision, dry run
    device = device or rt.device
    precision = rt.precision or ("bf16" if cfg.bf16 else "fp32")
    _seed_everything(cfg.seed)
    # AcceleratorState is a process-wide singleton that refuses a second precision; reset it (the
    # process group, in PartialState, stays) so successive fits in one process may differ in bf16.
    AcceleratorState._reset_state()
    accelerator = Accelerator(mixed_precision="bf16" if precision == "bf16" else "no", cpu=(device == "cpu"))
    n_proc, rank = accelerator.num_processes, accelerator.process_index
    if cfg.processes is not None and cfg.processes != n_proc:
        raise ValueError(f"this run was planned for {cfg.processes} process(es) (its per-process batch and step "
                         f"count assume it), but {n_proc} are running; launch it with `accelerate launch "
                         f"--num_processes {cfg.processes}` or set processes={n_proc} in the experiment")
    if rank:  # each process draws its own masks and dropout (process 0 draws what a single process would)
        _seed_everything(cfg.seed + rank)
    dev = accelerator.device  # where batches go: this process's GPU, or the CPU
    if rt.dry_run:  # the model and sequence length as given, a batch of two micro-batches, a few steps
        batch_size, micro = runtime.dry_batch(cfg.batch_size, cfg.micro_batch, dev.type)
        # every step of it logged and validated, so that curves and validation code run on its few steps
        cfg = dataclasses.replace(cfg, batch_size=batch_size, micro_batch=micro, log_every=1, eval_every=1)
        max_steps = rt.max_steps if max_steps is None else min(max_steps, rt.max_steps)
    steps_per_epoch = math.ceil(len(train_data) / (cfg.batch_size * n_proc))
    total_steps = steps_per_epoch * cfg.epochs
    stop = total_steps if max_steps is None else min(max_steps, total_steps)
    warmup = cfg.warmup(total_steps)
    if warmup >= total_steps and total_steps > 1 and not rt.dry_run:
        warnings.warn(f"warm-up ({warmup} steps) is not shorter than the whole run ({total_steps} steps): the "
                      f"learning rate never reaches lr={cfg.lr} and never decays; set warmup_fraction (e.g. 0.1) "
                      "or fewer warmup_steps", stacklevel=4)

    optimizer = make_optimizer(model.parameters(), cfg)
    # Stepped by us once per optimiser step, so it is not prepared: Accelerate would step it per process.
    scheduler = LambdaLR(optimizer, partial(_lr_factor, total_steps=total_steps, warmup_steps=warmup))
    model, optimizer = accelerator.prepare(model, optimizer)  # not the data: we shard it ourselves
    inner = accelerator.unwrap_model(model)  # keeps the autocast wrapper, for evaluation and saving
    if config is None:  # the model's own config (RoMAE models keep it): a resume then checks it too
        config = getattr(inner, "cfg", None)
    saved_config = {**(dataclasses.asdict(config) if dataclasses.is_dataclass(config) else config or {}),
                    "train": cfg.to_dict()}
    return engine.Run(model=model, inner=inner, optimizer=optimizer, scheduler=scheduler, accelerator=accelerator,
                      cfg=cfg, train_data=train_data, val_data=val_data, metric_fns=metric_fns, callback=callback,
                      transform=transform, precision=precision, steps_per_epoch=steps_per_epoch,
                      total_steps=total_steps, stop=stop, out=Path(out_dir) if out_dir is not None else None,
                      saved_config=saved_config, deadline=rt.deadline, stop_file=rt.stop_file)


def _resume(run: engine.Run, resume: bool, allow_config_change: bool):
    """Continue from out_dir's checkpoint when there is one and `resume` (refusing another config, other data or
    another optimiser unless told) -> (the RNG states to restore or None, whether it resumed)."""
    found = None  # the main process reads the checkpoint while checking it; the others read it after

    def settle():
        nonlocal found
        found = checkpoint.settle(run.ckpt)
        return found is not None

    if not (resume and run.out is not None and _on_main(run.accelerator, settle)):
        return None, False
    ckpt, cfg = run.ckpt, run.cfg
    weights, state, saved = found or checkpoint.read(ckpt)
    changes = checkpoint.config_changes(saved, run.saved_config)
    if changes and not allow_config_change:
        raise ValueError(checkpoint.config_error(ckpt, changes))
    if state["steps_per_epoch"] != run.steps_per_epoch:
        raise ValueError(f"checkpoint has {state['steps_per_epoch']} steps/epoch, this run "
                         f"{run.steps_per_epoch}: same data, batch size and process count are needed")
    if "train.optimizer" in changes:
        raise ValueError(f"{ckpt}: the optimizer changed ({changes['train.optimizer']['saved']} -> "
                         f"{changes['train.optimizer']['now']}); its saved state cannot continue under another "
                         "optimizer. Use a fresh out_dir or resume=False")
    run.inner.load_state_dict(weights)
    run.optimizer.load_state_dict(state["optimizer"])
    run.scheduler.load_state_dict(state["scheduler"])
    run.step, run.seconds = state["step"], state["seconds"]
    if changes:  # allowed: go on under the new settings, not the saved optimizer's and scheduler's
        apply_settings(run.optimizer, run.scheduler, cfg, run.step, run.total_steps, cfg.warmup(run.total_steps))
    rank = run.accelerator.process_index
    mine = state["ranks"][rank] if rank < len(state["ranks"]) else state["ranks"][0]
    rng, run.window = mine["rng"], mine["window"]
    if state.get("data") is not None and state["data"] != run.fingerprint:
        raise ValueError(f"{ckpt} was trained on other data than this run's (the training data's "
                         f"fingerprint, {len(run.train_data)} samples, differs from the checkpoint's): resuming "
                         "would mix two datasets. Use a fresh out_dir, or resume=False")
    run.history = checkpoint.resumed_history(run.hist_path, state.get("history"), run.step)
    if changes and run.step < run.stop:  # recorded when training goes on under them
        run.history.append({"step": run.step, "event": "config_changed", "changes": changes})
    return rng, True


def compile_model(model: torch.nn.Module) -> torch.nn.Module:
    """`torch.compile(model)`: the same module, its forward and backward fused by Inductor.

    Random draws inside the model (masks, dropout) keep eager PyTorch's generator
    (`torch._inductor.config.fallback_random`, set process-wide), so seeds, checkpoints and resumes
    give the draws an eager run would. It pays for fixed shapes: data of varying length (e.g. with
    `trim_padding`) recompiles for new lengths, which can cost more than it saves."""
    import torch._inductor.config as inductor_config

    inductor_config.fallback_random = True
    return torch.compile(model)


# the public API; load_checkpoint, load_state and read_config live in romae.checkpoint and are re-exported here
__all__ = ["ArrayDataset", "FitResult", "compile_model", "fit", "load_checkpoint", "load_state", "lr_at",
           "predict", "read_config"]
