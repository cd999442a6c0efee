"""The inside of `romae.train.fit`, one phase per function (as MAE's `engine_pretrain.train_one_epoch` beside its
`main_pretrain`): a `Run` carries what the phases share; `train_one_epoch` runs one epoch's optimiser steps, each
followed by `after_step` (the history row, the validation, the checkpoint); `_train_step` is one optimiser step
(gradient accumulation over micro-batches in `_accumulate`); `_evaluate` the validation loss and metrics."""

from __future__ import annotations

import contextlib
import math
import os
import time
from dataclasses import dataclass, field

import torch
from accelerate.utils import gather_object

from . import checkpoint, feeding, graphs, masking, progress, runtime
from .config import TrainConfig


@dataclass
class Run:
    """What one `fit` carries from phase to phase: the prepared model and optimiser, the schedule's sizes, where it
    saves, and the state that moves with each step (step, history, the running sums of the next history row)."""

    model: torch.nn.Module  # prepared by Accelerate (what trains)
    inner: torch.nn.Module  # unwrapped, with its autocast wrapper (what evaluates and saves)
    optimizer: torch.optim.Optimizer
    scheduler: object
    accelerator: object
    cfg: TrainConfig
    train_data: object
    val_data: object
    metric_fns: dict
    callback: object
    transform: object
    precision: str
    steps_per_epoch: int
    total_steps: int
    stop: int  # the last step this call runs (max_steps may stop it early)
    out: object = None  # out_dir (Path) or None
    saved_config: dict = field(default_factory=dict)
    fingerprint: str | None = None  # the training data's, checked on resume
    step: int = 0
    seconds: float = 0.0
    history: list = field(default_factory=list)
    window: dict = field(default_factory=lambda: {"loss": 0.0, "grad_norm": 0.0, "n": 0})  # sums since the last row
    keep_prev: bool = False  # a save keeps the checkpoint it replaces as prev (only this run's own)
    # set by `start`
    params: list = field(default_factory=list)
    deferred: bool = False
    pending: list = field(default_factory=list)
    train_model: object = None
    compiling: bool = False
    graphs: object = None  # romae.graphs.GraphedSteps when steps are replayed from CUDA graphs
    lengths: object = None
    feeder: object = None
    bar: object = None
    tell: object = None
    t0: float = 0.0
    # stopping cleanly before the end (`pause_due`): a deadline (Unix time), a stop file, and what the run has learnt
    # of its own pace: the slowest recent step and the last checkpoint's save, in seconds
    deadline: float | None = None
    stop_file: str | None = None
    paused: str | None = None  # why it stopped before `stop` was reached, once it did
    slowest: float = 0.0
    save_seconds: float | None = None
    first: int = 0  # the step this call started from

    @property
    def dev(self) -> torch.device:
        return self.accelerator.device

    @property
    def main(self) -> bool:
        return self.accelerator.is_main_process

    @property
    def ckpt(self):
        return self.out / "checkpoint" if self.out is not None else None

    @property
    def hist_path(self):
        return self.out / "history.jsonl" if self.out is not None else None

    def log(self, row: dict) -> None:
        """Append a history row (and to history.jsonl, on the main process)."""
        self.history.append(row)
        if self.main:
            checkpoint.append_row(self.hist_path, row)


def start(run: Run, held: contextlib.ExitStack, on_progress, compile_model) -> None:
    """What the steps need, set up once: the trained parameters, deferred input checks on an accelerator, the
    compiled model, the length buckets, the feeder, the bar and the caller's progress callback."""
    cfg, dev = run.cfg, run.dev
    run.params = [p for p in run.model.parameters() if p.requires_grad]
    # the loss is read back every step on the CPU (free), and checked in batches on accelerators
    run.deferred, run.pending = masking._async_checks(dev), []
    held.enter_context(masking.deferred_checks())  # input checks on an accelerator: read with the losses
    run.train_model, run.compiling = (compile_model(run.model), True) if cfg.compile else (run.model, False)
    run.lengths = feeding.lengths(run.train_data) if cfg.length_buckets else None
    # a transform runs on the host, where reading a batch (trim_padding's columns, a mask's count) costs no sync
    run.feeder = feeding.Feeder(run.train_data, dev, feeding.feed_mode(run.train_data, dev,
                                                                       transform=run.transform is not None))
    held.callback(run.feeder.close)
    if graphs.wanted(cfg, dev, run.accelerator.num_processes, run.optimizer) and graphs.fits(run.train_data, cfg):
        run.graphs = graphs.GraphedSteps(
            lambda batch: _update(run.train_model, run.optimizer, batch, run.accelerator, run.params, cfg), dev,
            lengths=graphs.trim_lengths(run.train_data))
        graphs.capturable(run.optimizer, dev)  # the learning rate a device tensor the scheduler fills
        held.callback(run.graphs.close)
    # a bar on a terminal, a plain line every few percent elsewhere (a log, a notebook's stream)
    run.bar = progress.bar(total=run.stop, initial=run.step, disable=not (cfg.progress and run.main), desc="train")
    run.tell = on_progress if run.main else None  # the caller's progress callback: on the main process only
    if run.tell is not None:
        run.tell("start", run.step, run.stop)
    run.t0 = time.perf_counter() - run.seconds
    run.first = run.step
    run.model.train()


def train_one_epoch(run: Run, epoch: int) -> None:
    """The optimiser steps of `epoch` from `run.step` on, until the epoch or the run (`run.stop`) ends.
    The order depends on (seed, epoch) only, so a resumed run skips done batches by arithmetic."""
    cfg, n_proc, rank = run.cfg, run.accelerator.num_processes, run.accelerator.process_index
    spe = run.steps_per_epoch
    gen = torch.Generator().manual_seed(cfg.seed + epoch)
    perm = torch.randperm(len(run.train_data), generator=gen)
    if cfg.length_buckets:
        perm = feeding.bucketed(perm, run.lengths, cfg.batch_size * n_proc, cfg.length_buckets, gen)
    for b in range(run.step - epoch * spe, spe):
        idx = feeding.shard(perm, b, cfg.batch_size, rank, n_proc)
        following = feeding.shard(perm, b + 1, cfg.batch_size, rank, n_proc) if b + 1 < min(
            spe, run.stop - epoch * spe) else None
        batch = run.feeder.get(idx, following)
        lr = host_lr(run.optimizer, run.scheduler)  # the rate this step uses
        t_step = time.perf_counter()
        with _naming_samples(run.train_data, idx, "the training data"):
            if run.transform is not None:  # under CUDA graphs, trim_padding cuts to a few lengths (graphs.lengths)
                with masking.trimmed_to(run.graphs.lengths if run.graphs is not None else None):
                    batch = run.transform(batch)
            # a given mask is checked here, on the host, once: the model then takes its count from there
            hidden = run.feeder.hidden_count(batch, idx) if run.deferred else None
            batch = feeding.to_device(batch, run.dev)
            with masking.checked_masks(hidden) if hidden is not None else contextlib.nullcontext():
                loss, grad_norm = _train_step(run.train_model, run.optimizer, run.scheduler, batch, run.accelerator,
                                              run.params, cfg, run.step, check=not run.deferred, inner=run.inner,
                                              graphs=run.graphs)
        run.step += 1
        if run.step < run.stop:  # asked to stop, or the deadline is near: this step is the last, saved as such
            run.paused = pause_due(run, time.perf_counter() - t_step)
        after_step(run, epoch, loss, grad_norm, lr, t_step)
        if run.step >= run.stop or run.paused is not None:
            break


def pause_due(run: Run, took: float | None = None) -> str | None:
    """Why the run should stop cleanly now, or None: a stop requested of this process (`romae.runtime.request_stop`,
    a signal), its stop file present, or its deadline closer than the next step and a checkpoint take (twice the
    slowest recent step, the first of a call aside, which sets things up; 1.5 x the last save or its estimate; half a
    second). Only a run with an out_dir stops so: its
    checkpoint continues it. With several processes, every 16th step, the decision of all (any one asks)."""
    if run.out is None:
        return None
    if took is not None and run.step > run.first + 1:
        run.slowest = max(took, 0.95 * run.slowest)  # forgets a slow step over some dozens of steps
    n_proc = run.accelerator.num_processes
    if n_proc > 1 and run.step % 16:
        return None
    why = runtime.stop_requested()
    if why is None and run.stop_file and os.path.exists(run.stop_file):  # it says why (a signal's name), or nothing
        try:
            why = open(run.stop_file).read().strip() or "asked to stop"
        except OSError:
            why = "asked to stop"
    if why is None and run.deadline is not None:
        save = run.save_seconds if run.save_seconds is not None else 0.2 + _model_bytes(run.inner) * 3 / 200e6
        if time.time() + 2 * run.slowest + 1.5 * save + 0.5 >= run.deadline:
            why = "time budget"
    if n_proc > 1:  # one decision for all: any process's reason stops every one
        asked = run.accelerator.reduce(torch.tensor(float(why is not None), device=run.dev), "max").item()
        why = why or ("time budget" if asked else None)
    return why


def _model_bytes(model) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def after_step(run: Run, epoch: int, loss, grad_norm, lr: float, t_step: float) -> None:
    """After optimiser step `run.step`: the progress, the running sums, and when due the history row, the
    validation row and the checkpoint."""
    cfg, step = run.cfg, run.step
    if run.deferred:
        run.pending.append((step, loss))
    if run.compiling:  # the first step compiles: how long it took goes into the history
        run.log({"step": step, "event": "compiled", "first_step_seconds": time.perf_counter() - t_step})
        run.compiling = False
    run.bar.update(1)
    if run.tell is not None:
        run.tell("step", step, run.stop)
    # grad_norm stays a tensor until a row is written: one host sync less per step.
    w = run.window
    run.window = {"loss": w["loss"] + loss, "grad_norm": w["grad_norm"] + grad_norm, "n": w["n"] + 1}
    ep = round(step / run.steps_per_epoch, 4)  # 1.0 = end of the first epoch
    if step % cfg.log_every == 0 or step == run.total_steps:
        _log_window(run, ep, lr)
    due = step % cfg.eval_every == 0 if cfg.eval_every else step % run.steps_per_epoch == 0
    if run.val_data is not None and (due or step == run.total_steps):
        _check_losses(run.pending)
        row = {"step": step, "epoch": ep,
               **_evaluate(run.inner, run.val_data, cfg.batch_size, run.accelerator, run.metric_fns)}
        run.log(row)
        if run.callback is not None and run.main:
            run.callback(row, run.inner)
    periodic = cfg.checkpoint_every and step % cfg.checkpoint_every == 0
    if run.ckpt is not None and (step == run.stop or periodic or run.paused is not None):
        _save(run, epoch)


def _log_window(run: Run, ep: float, lr: float) -> None:
    """The history row of the steps since the last: their mean loss (over processes) and gradient norm. The
    input checks, the losses and the window's sums are read back together (one host sync per row)."""
    w = run.window
    loss_sum, norm_sum = _check_losses(run.pending, (w["loss"], w["grad_norm"]))
    n, mean_loss = w["n"], loss_sum / w["n"]
    if run.accelerator.num_processes > 1:  # the global batch's loss, not only this process's share of it
        mean_loss = run.accelerator.reduce(torch.tensor(mean_loss, device=run.dev), "mean").item()
    run.log({"step": run.step, "epoch": ep, "lr": lr, "loss": mean_loss,
             "grad_norm": norm_sum / n, "seconds": time.perf_counter() - run.t0})
    run.bar.set_postfix(loss=f"{mean_loss:.4g}", lr=f"{lr:.3g}")
    run.window = {"loss": 0.0, "grad_norm": 0.0, "n": 0}


def _save(run: Run, epoch: int) -> None:
    """A checkpoint at `run.step`: weights, optimiser, scheduler, RNG states, history, running sums."""
    _check_losses(run.pending)
    train_state = {"optimizer": graphs.portable(run.optimizer.state_dict()),
                   "scheduler": graphs.portable(run.scheduler.state_dict()),
                   "step": run.step, "epoch": epoch, "steps_per_epoch": run.steps_per_epoch,
                   "seconds": time.perf_counter() - run.t0, "data": run.fingerprint, "history": list(run.history)}
    w = run.window
    mine = {"window": {**w, "loss": float(w["loss"]), "grad_norm": float(w["grad_norm"])}}
    t = time.perf_counter()
    checkpoint.save(run.ckpt, run.accelerator, run.inner, train_state, mine,
                    {**run.saved_config, "step": run.step, "total_steps": run.total_steps},
                    keep_prev=run.keep_prev and run.step < run.total_steps)
    run.save_seconds = time.perf_counter() - t
    run.keep_prev = True


def finish(run: Run) -> None:
    """The last checks and lines of a run that trained (with CUDA graphs: a history row saying how many steps
    were replayed from how many graphs, and how many ran eagerly)."""
    _check_losses(run.pending)
    if run.graphs is not None and run.main:
        run.log({"step": run.step, "event": "cuda_graphs", "graphs": len(run.graphs.graphs),
                 "replayed_steps": run.graphs.replays, "eager_steps": run.graphs.eager,
                 **({"capture_failed": run.graphs.failed} if run.graphs.failed else {})})
    run.bar.close()
    if run.tell is not None:
        run.tell("end" if run.paused is None else "paused", run.step, run.stop)


# ----------------------------------------------------------------------------- one optimiser step, validation

def _nonfinite(value: float, step: int) -> RuntimeError:
    return RuntimeError(f"non-finite training loss {value} at step {step}; nothing was saved for it")


def _train_step(model, optimizer, scheduler, batch: dict, accelerator, params: list, cfg: TrainConfig,
                step: int, check: bool = True, inner=None, graphs=None) -> tuple[float | torch.Tensor, torch.Tensor]:
    """One optimiser step on `batch`; returns (loss, gradient norm before clipping: scalar tensor).

    `check`: read the loss back and refuse a non-finite one before the update (a NaN step would poison
    the weights). Without it (accelerators: no device sync per step) the loss stays a tensor for
    `_check_losses`, which runs before anything is logged or saved.

    With a micro-batch (cfg.micro_batch) or several processes, see `_accumulate`; else one forward and
    backward of the batch's loss, as it always was (`_update`), replayed from a CUDA graph with `graphs`
    (romae.graphs.GraphedSteps). The scheduler steps on the host, after the update."""
    if graphs is not None:
        value, grad_norm = graphs(batch)
    elif cfg.micro_batch is None and accelerator.num_processes == 1:
        value, grad_norm = _update(model, optimizer, batch, accelerator, params, cfg, step, check)
    else:
        optimizer.zero_grad(set_to_none=True)
        value = _accumulate(model, inner if inner is not None else model, batch, accelerator, params, cfg, step, check)
        grad_norm = _clip(accelerator, params, cfg)
        optimizer.step()
    scheduler.step()
    return value, grad_norm.detach().float()


def _update(model, optimizer, batch: dict, accelerator, params: list, cfg: TrainConfig, step: int = 0,
            check: bool = False) -> tuple[float | torch.Tensor, torch.Tensor]:
    """One forward and backward of the batch's loss and the optimiser's update: what a CUDA graph captures (with
    check=False, nothing is read back) -> (loss, gradient norm before clipping)."""
    optimizer.zero_grad(set_to_none=True)
    _, loss = model(**batch)
    value = _checked(loss, step, check)
    accelerator.backward(loss)
    grad_norm = _clip(accelerator, params, cfg)
    optimizer.step()
    return value, grad_norm.detach().float()


def _clip(accelerator, params: list, cfg: TrainConfig) -> torch.Tensor:
    """The gradients' total norm before clipping, clipped to cfg.grad_clip when set."""
    if cfg.grad_clip:
        return accelerator.clip_grad_norm_(params, cfg.grad_clip)
    return torch.nn.utils.get_total_norm([p.grad for p in params if p.grad is not None])  # no (no-op) rescaling


def host_lr(optimizer, scheduler) -> float:
    """The learning rate of the next step, as a number: the parameter group's, or, where it is a device tensor
    (CUDA graphs), the scheduler's own value for it (its base rate times its factor: the same float it filled
    the tensor with), so reading it never waits for the device."""
    lr = optimizer.param_groups[0]["lr"]
    if not torch.is_tensor(lr):
        return lr
    return scheduler.base_lrs[0] * scheduler.lr_lambdas[0](scheduler.last_epoch)


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


def _check_losses(pending: list[tuple[int, torch.Tensor]], extra=()) -> list[float]:
    """Raise for the first input check that failed since the last call (masking.flush_checks), then for the
    first non-finite loss among the unchecked (step, loss) pairs; else return the values of `extra` (scalar
    tensors or numbers). Checks, losses and `extra` are read back together: one device sync."""
    values = masking.flush_checks([loss for _, loss in pending] + list(extra))
    losses, rest = values[:len(pending)], values[len(pending):]
    bad = next(((s, v) for (s, _), v in zip(pending, losses) if not math.isfinite(v)), None)
    pending.clear()
    if bad is not None:
        raise _nonfinite(bad[1], bad[0])
    return rest


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


