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
from accelerate.utils import broadcast_object_list, gather_object
from torch.optim.lr_scheduler import LambdaLR
from tqdm import tqdm  # plain text bars: no ipywidgets needed in notebooks

from romae.config import TrainConfig, check_whole
from romae import checkpoint, feeding, masking, runtime
from romae.optim import _lr_factor, _make_optimizer, apply_settings, lr_at, make_optimizer
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


def _nonfinite(value: float, step: int) -> RuntimeError:
    return RuntimeError(f"non-finite training loss {value} at step {step}; nothing was saved for it")


def _train_step(model, optimizer, scheduler, batch: dict, accelerator, params: list, cfg: TrainConfig,
                step: int, check: bool = True, inner=None) -> tuple[float | torch.Tensor, torch.Tensor]:
    """One optimiser step on `batch`; returns (loss, gradient norm before clipping: scalar tensor).

    `check`: read the loss back and refuse a non-finite one before the update (a NaN step would poison
    the weights). Without it (accelerators: no device sync per step) the loss stays a tensor for
    `_check_losses`, which runs before anything is logged or saved.

    With a micro-batch (cfg.micro_batch) or several processes, see `_accumulate`; else one forward and
    backward of the batch's loss, as it always was."""
    optimizer.zero_grad(set_to_none=True)
    n_proc = accelerator.num_processes
    if cfg.micro_batch is None and n_proc == 1:
        _, loss = model(**batch)
        value = _checked(loss, step, check)
        accelerator.backward(loss)
    else:
        value = _accumulate(model, inner if inner is not None else model, batch, accelerator, params, cfg, step, check)
    if cfg.grad_clip:
        grad_norm = accelerator.clip_grad_norm_(params, cfg.grad_clip)
    else:  # the same norm, without the (no-op) rescaling
        grad_norm = torch.nn.utils.get_total_norm([p.grad for p in params if p.grad is not None])
    optimizer.step()
    scheduler.step()
    return value, grad_norm.detach().float()


def _checked(loss: torch.Tensor, step: int, check: bool) -> float | torch.Tensor:
    if not check:
        return loss.detach().float()
    value = loss.item()
    if not math.isfinite(value):
        raise _nonfinite(value, step + 1)
    return value


def _accumulate(model, inner, batch: dict, accelerator, params: list, cfg: TrainConfig, step: int,
                check: bool) -> float | torch.Tensor:
    """Gradients of the whole global batch's loss from micro-batch forwards -> the batch's loss.

    A loss that is a mean over a data-dependent count (real hidden tokens with padding, weighted targets) is
    not the mean of the micro-batches' means: each micro-batch's loss is multiplied back into its sum by the
    count it averaged over (`model.loss_count`, set by RoMAE models; otherwise its number of samples), the
    sums' gradients are added up (DDP synchronises only at the last), and the gradients are divided by the
    count summed over micro-batches and processes. So k micro-batches on P processes give the update of one
    batch of the same samples in one forward, up to float rounding."""
    pieces = feeding.micro_batches(batch, cfg.micro_batch or feeding.n_samples(batch))
    sums, counts = [], []
    for i, piece in enumerate(pieces):
        last = i == len(pieces) - 1
        with contextlib.nullcontext() if last else accelerator.no_sync(model):
            _, loss = model(**piece)
            _checked(loss, step, check)
            count = getattr(inner, "loss_count", None)
            if count is None:
                count = feeding.n_samples(piece)
            count = torch.as_tensor(count, dtype=loss.dtype, device=loss.device).detach()
            accelerator.backward(loss * count)
        sums.append(loss.detach() * count)
        counts.append(count)
    total = torch.stack([torch.stack(sums).sum(), torch.stack(counts).sum()])
    if accelerator.num_processes > 1:
        total = accelerator.reduce(total, reduction="sum")
    # DDP averaged the processes' gradients; the batch's are their sum over the count: x P / count
    scale = accelerator.num_processes / total[1].clamp(min=1)
    for p in params:
        if p.grad is not None:
            p.grad.mul_(scale.to(p.grad.dtype))
    value = total[0] / total[1].clamp(min=1)
    return value.item() if check else value


def _check_losses(pending: list[tuple[int, torch.Tensor]]) -> None:
    """Raise for the first input check that failed since the last call (masking.flush_checks), then for the
    first non-finite loss among the unchecked (step, loss) pairs; one device sync each."""
    masking.flush_checks()
    if pending:
        values = torch.stack([loss for _, loss in pending]).tolist()
        bad = next(((s, v) for (s, _), v in zip(pending, values) if not math.isfinite(v)), None)
        pending.clear()
        if bad is not None:
            raise _nonfinite(bad[1], bad[0])


@contextlib.contextmanager
def _naming_samples(data, idx: torch.Tensor, what: str):
    """Re-raise a model's BadSample (a sample named by its position in the batch) naming the sample's
    index in `data` (and its id), so a shuffled batch does not hide which sample is bad."""
    def rename(e: masking.BadSample) -> masking.BadSample:
        return e.at(masking.name_sample(data, int(idx[e.sample]), what))

    try:
        with masking.naming(rename):  # a deferred check read later still names this batch's sample
            yield
    except masking.BadSample as e:
        if e.named:  # a deferred check of an earlier batch, named already
            raise
        raise rename(e) from None


@torch.no_grad()
def _evaluate(model, data, batch_size: int, accelerator, metrics: dict | None = None) -> dict:
    """{"val_loss": the loss over all of `data` (each batch weighted by the count its loss averaged over: real
    hidden tokens, class weights, else samples; so batching and process count do not change it), **metrics};
    whole batches are dealt round-robin to processes. Metrics see all outputs and labels (gathered from every
    process)."""
    model.eval()
    n_proc, sums = accelerator.num_processes, torch.zeros(2, dtype=torch.float64, device=accelerator.device)
    outputs, labels = [], []
    for idx, batch in feeding.batches(data, batch_size, accelerator.process_index, n_proc):
        with _naming_samples(data, idx, "the validation data"):
            out, loss = model(**feeding.to_device(batch, accelerator.device))
        count = getattr(model, "loss_count", None)  # what the loss averaged over (real hidden tokens, weights)
        count = sums.new_tensor(len(idx)) if count is None else count.detach().to(sums)
        sums += torch.stack([loss.detach().double() * count, count])
        if metrics:
            outputs.append(out.detach().float().cpu())
            labels.append(batch["labels"].cpu())
    if n_proc > 1:
        sums = accelerator.reduce(sums, reduction="sum")
    row = {"val_loss": (sums[0] / sums[1]).item()}
    if metrics:
        if n_proc > 1:
            parts = gather_object([(outputs, labels)])
            outputs, labels = [o for p in parts for o in p[0]], [y for p in parts for y in p[1]]
        y_pred, y_true = torch.cat(outputs), torch.cat(labels)
        row.update({name: float(fn(y_true, y_pred)) for name, fn in metrics.items()})
    model.train()
    return row


@torch.no_grad()
def predict(model: torch.nn.Module, data, batch_size: int = 256, device: str | torch.device | None = None,
            progress: bool | None = None, *, as_labels: bool = False, classes=None):
    """Outputs of `model` on every sample of `data`, in order, on the CPU: e.g. logits [n, n_classes].

    Eval mode (no dropout), no gradients, batched; only the keys the model takes are passed (labels are
    not needed), with padding masks. `device`: where to run (default: the model's). The model's mode is
    restored afterwards. A progress bar shows for more than 20 batches unless `progress=False`.

    `data`: a dataset, or a dict of tensors {values, positions, pad_mask, ...} sharing their first dimension.
    `as_labels=True` (classifiers): the predicted classes by name instead, a numpy array [n] (or [n, N] for
    per-token outputs) of the names the builder saw, `data.classes` (e.g. a TokenDataset from
    `from_sequences`), or of `classes=` when the data has none.
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
        for idx, batch in tqdm(feeding.batches(data, batch_size), total=n_batches, disable=not show, desc="predict"):
            batch = feeding.to_device({k: v for k, v in feeding.model_keys(model, batch).items() if k != "labels"}, dev)
            with _naming_samples(data, idx, "the data"):
                outs.append(model(**batch)[0].float().cpu())
    finally:
        model.train(was_training)
    out = torch.cat(outs)
    if names is None:
        return out
    if out.shape[-1] != len(names):
        raise ValueError(f"the model has {out.shape[-1]} outputs but {len(names)} class names were given")
    table = np.empty(len(names), dtype=object)
    table[:] = names
    picked = table[out.argmax(-1).numpy()]
    return picked.astype(str) if all(isinstance(n, str) for n in names) else picked


def fit(model: torch.nn.Module, train_data, cfg: TrainConfig, *, val_data=None,
        out_dir: str | Path | None = None, resume: bool = True, config: dict | None = None,
        callback=None, device: str | None = None, max_steps: int | None = None,
        metrics=(), allow_config_change: bool = False, transform=None, on_progress=None) -> FitResult:
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
    resumed), "step" after each optimiser step and "end" when training stops, `stop` being the last step this call
    runs (e.g. the terminal lines of `make reproduce`, `romae.compendium.terminal.Training`). fit itself prints
    nothing but its tqdm bar (cfg.progress) and reads no environment variable: the device, precision and dry run
    come from `romae.runtime.current()`, the process's settings (defaults unless a caller set them).

    One fit at a time may use an out_dir (another raises RuntimeError). Resuming refuses (ValueError) a
    `cfg` or `config` other than the checkpoint's, cfg.progress and cfg.log_every aside, unless
    `allow_config_change`: then training goes on under the new settings (lr, schedule, betas, weight decay,
    clipping; another optimizer is refused) and a {"event": "config_changed"} history row records them. A corrupted
    checkpoint/ is set aside with a warning and checkpoint.prev/ resumed instead, when that one is good.

    If fit fails or is interrupted, `model` is given back as it came (its weights, device and mode): what was
    learnt until then is in out_dir's checkpoint, if any, never half in the caller's model.
    """
    if not isinstance(cfg, TrainConfig):
        raise TypeError(f"fit: cfg must be a romae.TrainConfig, got {type(cfg).__name__}")
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"fit: model must be a torch.nn.Module, got {type(model).__name__}")
    max_steps = check_whole("fit", "max_steps", max_steps, 0, none=True)
    before = _snapshot(model)
    try:
        return _fit(model, train_data, cfg, val_data=val_data, out_dir=out_dir, resume=resume, config=config,
                    callback=callback, device=device, max_steps=max_steps, metrics=metrics,
                    allow_config_change=allow_config_change, transform=transform, on_progress=on_progress)
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
         metrics, allow_config_change, transform, on_progress) -> FitResult:
    from .metrics import resolve_metrics  # metrics imports nothing from here

    metric_fns = resolve_metrics(metrics)
    if metric_fns and val_data is None:
        raise ValueError(f"metrics {list(metric_fns)} are computed on validation data: pass val_data=")
    if len(train_data) == 0:
        raise ValueError("fit: the training dataset is empty")
    rt = runtime.current()  # what `make reproduce` asked of this process: device, precision, dry run
    device = device or rt.device
    precision = rt.precision or ("bf16" if cfg.bf16 else "fp32")
    _seed_everything(cfg.seed)
    # AcceleratorState is a process-wide singleton that refuses a second precision; reset it (the
    # process group, in PartialState, stays) so successive fits in one process may differ in bf16.
    AcceleratorState._reset_state()
    accelerator = Accelerator(mixed_precision="bf16" if precision == "bf16" else "no", cpu=(device == "cpu"))
    n_proc, rank, main = accelerator.num_processes, accelerator.process_index, accelerator.is_main_process
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
                      "or fewer warmup_steps", stacklevel=3)

    optimizer = make_optimizer(model.parameters(), cfg)
    # Stepped by us once per optimiser step, so it is not prepared: Accelerate would step it per process.
    scheduler = LambdaLR(optimizer, partial(_lr_factor, total_steps=total_steps, warmup_steps=warmup))
    model, optimizer = accelerator.prepare(model, optimizer)  # not the data: we shard it ourselves
    inner = accelerator.unwrap_model(model)  # keeps the autocast wrapper, for evaluation and saving

    out = Path(out_dir) if out_dir is not None else None
    ckpt, hist_path = (out / "checkpoint", out / "history.jsonl") if out else (None, None)
    if config is None:  # the model's own config (RoMAE models keep it): a resume then checks it too
        config = getattr(inner, "cfg", None)
    saved_config = {**(dataclasses.asdict(config) if dataclasses.is_dataclass(config) else config or {}),
                    "train": cfg.to_dict()}
    with contextlib.ExitStack() as held:  # out_dir's lock, released when fit ends, however it ends
        held.enter_context(_matmul_precision(precision))
        if out is not None:
            _on_main(accelerator, lambda: held.enter_context(checkpoint.lock(out)))
            _on_main(accelerator, lambda: checkpoint.repair_swap(ckpt))

        step, seconds, history, rng = 0, 0.0, [], None
        fingerprint = feeding.data_fingerprint(train_data) if out is not None else None  # checked on resume
        window = {"loss": 0.0, "grad_norm": 0.0, "n": 0}  # running sums since the last history row
        found = None  # the main process reads the checkpoint while checking it; the others read it after

        def settle():
            nonlocal found
            found = checkpoint.settle(ckpt)
            return found is not None

        resumed = resume and out is not None and _on_main(accelerator, settle)
        if resumed:
            weights, state, saved = found or checkpoint.read(ckpt)
            changes = checkpoint.config_changes(saved, saved_config)
            if changes and not allow_config_change:
                raise ValueError(checkpoint.config_error(ckpt, changes))
            if state["steps_per_epoch"] != steps_per_epoch:
                raise ValueError(f"checkpoint has {state['steps_per_epoch']} steps/epoch, this run "
                                 f"{steps_per_epoch}: same data, batch size and process count are needed")
            if "train.optimizer" in changes:
                raise ValueError(f"{ckpt}: the optimizer changed ({changes['train.optimizer']['saved']} -> "
                                 f"{changes['train.optimizer']['now']}); its saved state cannot continue under another "
                                 "optimizer. Use a fresh out_dir or resume=False")
            inner.load_state_dict(weights)
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
            step, seconds = state["step"], state["seconds"]
            if changes:  # allowed: go on under the new settings, not the saved optimizer's and scheduler's
                apply_settings(optimizer, scheduler, cfg, step, total_steps, warmup)
            mine = state["ranks"][rank] if rank < len(state["ranks"]) else state["ranks"][0]
            rng, window = mine["rng"], mine["window"]
            if state.get("data") is not None and state["data"] != fingerprint:
                raise ValueError(f"{ckpt} was trained on other data than this run's (the training data's "
                                 f"fingerprint, {len(train_data)} samples, differs from the checkpoint's): resuming "
                                 "would mix two datasets. Use a fresh out_dir, or resume=False")
            history = checkpoint.resumed_history(hist_path, state.get("history"), step)
            if changes and step < stop:  # recorded when training goes on under them
                history.append({"step": step, "event": "config_changed", "changes": changes})
        if hist_path is not None and main:
            hist_path.write_text("".join(json.dumps(r) + "\n" for r in history))
        if step >= stop:
            return FitResult(accelerator.unwrap_model(model, keep_fp32_wrapper=False), history, step, out)
        if rng is not None:
            checkpoint.set_rng_state(rng)  # last, so nothing between here and the first batch draws from the RNGs

        def log(row):
            history.append(row)
            if main:
                checkpoint.append_row(hist_path, row)

        # The checkpoint a save replaces is kept as prev only if it is this run's own: not on a fresh start
        # (it would be another run's), nor at the end (a finished run is not continued, nor falls back).
        keep_prev = resumed
        params = [p for p in model.parameters() if p.requires_grad]
        # the loss is read back every step on the CPU (free), and checked in batches on accelerators
        deferred, pending = masking._async_checks(dev), []
        held.enter_context(masking.deferred_checks())  # input checks on an accelerator: read with the losses
        train_model, compiling = (compile_model(model), True) if cfg.compile else (model, False)
        lengths = feeding.lengths(train_data) if cfg.length_buckets else None
        feeder = feeding.Feeder(train_data, dev, feeding.feed_mode(train_data, dev))
        held.callback(feeder.close)
        bar = tqdm(total=stop, initial=step, disable=not (cfg.progress and main), desc="train")
        tell = on_progress if main else None  # the caller's progress callback: on the main process only
        if tell is not None:
            tell("start", step, stop)
        t0 = time.perf_counter() - seconds
        model.train()
        epoch = step // steps_per_epoch
        while step < stop:
            # The order depends on (seed, epoch) only, so a resumed run skips done batches by arithmetic.
            gen = torch.Generator().manual_seed(cfg.seed + epoch)
            perm = torch.randperm(len(train_data), generator=gen)
            if cfg.length_buckets:
                perm = feeding.bucketed(perm, lengths, cfg.batch_size * n_proc, cfg.length_buckets, gen)
            for b in range(step - epoch * steps_per_epoch, steps_per_epoch):
                idx = feeding.shard(perm, b, cfg.batch_size, rank, n_proc)
                following = feeding.shard(perm, b + 1, cfg.batch_size, rank, n_proc) if b + 1 < min(
                    steps_per_epoch, stop - epoch * steps_per_epoch) else None
                batch = feeder.get(idx, following)
                batch = feeding.to_device(batch if transform is None else transform(batch), dev)
                lr = optimizer.param_groups[0]["lr"]  # the rate this step uses
                t_step = time.perf_counter()
                with _naming_samples(train_data, idx, "the training data"):
                    loss, grad_norm = _train_step(train_model, optimizer, scheduler, batch, accelerator, params, cfg,
                                                  step, check=not deferred, inner=inner)
                step += 1
                if deferred:
                    pending.append((step, loss))
                if compiling:  # the first step compiles: how long it took goes into the history
                    log({"step": step, "event": "compiled", "first_step_seconds": time.perf_counter() - t_step})
                    compiling = False
                bar.update(1)
                if tell is not None:
                    tell("step", step, stop)
                # grad_norm stays a tensor until a row is written: one host sync less per step.
                window = {"loss": window["loss"] + loss, "grad_norm": window["grad_norm"] + grad_norm,
                          "n": window["n"] + 1}
                ep = round(step / steps_per_epoch, 4)  # 1.0 = end of the first epoch
                if step % cfg.log_every == 0 or step == total_steps:
                    _check_losses(pending)
                    n, mean_loss = window["n"], float(window["loss"]) / window["n"]
                    if n_proc > 1:  # the global batch's loss, not only this process's share of it
                        mean_loss = accelerator.reduce(torch.tensor(mean_loss, device=dev), "mean").item()
                    log({"step": step, "epoch": ep, "lr": lr, "loss": mean_loss,
                         "grad_norm": float(window["grad_norm"]) / n, "seconds": time.perf_counter() - t0})
                    bar.set_postfix(loss=f"{mean_loss:.4g}", lr=f"{lr:.3g}")
                    window = {"loss": 0.0, "grad_norm": 0.0, "n": 0}
                due = step % cfg.eval_every == 0 if cfg.eval_every else step % steps_per_epoch == 0
                if val_data is not None and (due or step == total_steps):
                    _check_losses(pending)
                    row = {"step": step, "epoch": ep,
                           **_evaluate(inner, val_data, cfg.batch_size, accelerator, metric_fns)}
                    log(row)
                    if callback is not None and main:
                        callback(row, inner)
                periodic = cfg.checkpoint_every and step % cfg.checkpoint_every == 0
                if ckpt is not None and (step == stop or periodic):
                    _check_losses(pending)
                    train_state = {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                                   "step": step, "epoch": epoch, "steps_per_epoch": steps_per_epoch,
                                   "seconds": time.perf_counter() - t0, "data": fingerprint,
                                   "history": list(history)}
                    mine = {"window": {**window, "loss": float(window["loss"]),
                                       "grad_norm": float(window["grad_norm"])}}
                    checkpoint.save(ckpt, accelerator, inner, train_state, mine,
                                     {**saved_config, "step": step, "total_steps": total_steps},
                                     keep_prev=keep_prev and step < total_steps)
                    keep_prev = True
                if step >= stop:
                    break
            epoch += 1
        _check_losses(pending)
        bar.close()
        if tell is not None:
            tell("end", step, stop)
        return FitResult(accelerator.unwrap_model(model, keep_fp32_wrapper=False), history, step, out)

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
