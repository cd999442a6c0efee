"""Launch-bound training steps on a GPU (issue 44): what each change buys, measured in one run.

    python -m romae.runner.launch --device cuda [--steps 30] [--out reports/gpu/launch.json]

For three workloads (notebook 01's Table 1 tiny training, notebook 02's frequency training, App. B.2's Table 9 step),
in FP32 and BF16, one optimiser step at a time as `fit` runs it (`romae.engine._update`, the scheduler after it):

* ms per step (the mean over `steps` steps after warm-up, the device synchronised at both ends only), kernels per
  step (CUDA kernels the profiler sees in one eager step) and host-device syncs per step
  (`torch.cuda.set_sync_debug_mode("warn")` over the timed steps), for: the eager step as it was before issue 44
  (RMSNorm's composite path, head size 60 unpadded), + the fused RMSNorm, + head padding, + CUDA graphs;
* graphed against eager: `fit` of a small pre-training each way from the same seed (random masks, dropout, drop path,
  clipping, two batch shapes, validation between steps: `probe_training`), losses and final weights within
  TOLERANCE, and the graphed run's `cuda_graphs` row (a graph per shape, none failed);
* which attention kernels take a padded BF16 batch with head size 60 and with 64.

Writes one JSON (with the device and the stack). On the CPU it runs the eager variants only (a smoke of the code;
its times mean nothing for a GPU).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import time
import warnings
from functools import partial
from pathlib import Path

import torch

from .. import engine, graphs, kernels, masking, runtime
from ..compendium import measure, plan
from . import experiments
from ..config import TrainConfig
from ..optim import _lr_factor, make_optimizer

VARIANTS = (("eager, before issue 44", dict(fused_norm=False, pad_heads=False), False),
            ("+ fused RMSNorm", dict(fused_norm=True, pad_heads=False), False),
            ("+ head padding", dict(fused_norm=True, pad_heads=True), False),
            ("+ CUDA graphs", dict(fused_norm=True, pad_heads=True), True))


def workloads() -> dict[str, plan.Training]:
    """The three workloads, as the plan sees their paper trainings."""
    t9 = plan.Training("Table 9 step (App. B.2)", "pretrain", measure.table9_config(),
                       TrainConfig(batch_size=64), n_tokens=196, samples=10_000)
    experiments.load()
    return {"01 table1 tiny": plan.paper_trainings("01")[0], "02 frequency": plan.paper_trainings("02")[0], "table9": t9}


class _Accelerator:
    """What `engine._update` asks of Accelerate, for one process without a gradient scaler."""

    num_processes = 1

    @staticmethod
    def backward(loss):
        loss.backward()

    @staticmethod
    def clip_grad_norm_(params, max_norm):
        return torch.nn.utils.clip_grad_norm_(params, max_norm)


@contextlib.contextmanager
def switches(**on):
    saved = dict(kernels.ACCELERATOR)
    kernels.ACCELERATOR.update(on)
    try:
        yield
    finally:
        kernels.ACCELERATOR.update(saved)


def _stepper(t: plan.Training, dev: torch.device, precision: str, graphed: bool):
    """A closure running one training step of `t` (the update, then the scheduler), and the model."""
    from ..model import RoMAEForPrediction, RoMAEForPreTraining

    torch.manual_seed(0)
    net = (RoMAEForPreTraining if t.stage == "pretrain" else RoMAEForPrediction)(t.shape_model).to(dev).train()
    cfg = dataclasses.replace(t.train, micro_batch=None)
    opt = make_optimizer(net.parameters(), cfg)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, partial(_lr_factor, total_steps=10_000, warmup_steps=100))
    params = [p for p in net.parameters() if p.requires_grad]
    batch = {k: v.to(dev) for k, v in plan._batch(t.shape_model, t.stage, t.train.batch_size, t.n_tokens,
                                                  t.padded).items()}

    def forward(**b):
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
            return net(**b)

    update = partial(engine._update, forward, opt, accelerator=_Accelerator, params=params, cfg=cfg)
    runner = None
    if graphed:
        graphs.capturable(opt, dev)
        runner = graphs.GraphedSteps(lambda b: update(b), dev)

    def step():
        (runner or update)(batch)
        sched.step()

    return step, runner


def _sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def _kernels(step, dev) -> int | None:
    if dev.type != "cuda":
        return None
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        _sync(dev)
    return sum(1 for e in prof.events() if e.device_type == DeviceType.CUDA)


def measure_variant(t, dev, precision, on: dict, graphed: bool, steps: int) -> dict:
    with switches(**on), masking.deferred_checks():
        step, runner = _stepper(t, dev, precision, graphed)
        for _ in range(graphs.WARMUP + 2):  # eager warm-up; with graphs: captured and replayed
            step()
        masking.flush_checks()
        kernels = None if graphed else _kernels(step, dev)
        syncs = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if dev.type == "cuda":
                torch.cuda.set_sync_debug_mode("warn")
            _sync(dev)
            t0 = time.perf_counter()
            try:
                for _ in range(steps):
                    step()
            finally:
                if dev.type == "cuda":
                    torch.cuda.set_sync_debug_mode("default")
            _sync(dev)
            seconds = (time.perf_counter() - t0) / steps
        if dev.type == "cuda":
            syncs = sum("synchroniz" in str(w.message).lower() for w in caught) / steps
        masking.flush_checks()
        out = dict(ms_per_step=1e3 * seconds, kernels_per_step=kernels, syncs_per_step=syncs)
        if runner is not None:
            out.update(graphs=len(runner.graphs), replays=runner.replays)
            runner.close()
        return out


PROBE = dict(samples=44, batch=8, epochs=4, eval_every=3)  # 5 whole batches of 8 and a short one of 4 per epoch


def probe_training(precision: str = "fp32"):
    """What graphed steps must get right, in one small pre-training (issue 55): random masks (mask_ratio 0.5),
    dropout and drop path, gradient clipping, two batch shapes (whole batches and a short last one, each warmed up,
    captured and replayed within the 4 epochs) and validation between steps -> (model factory, data, val, cfg)."""
    from ..config import RoMAEConfig, size
    from ..model import RoMAEForPreTraining
    from ..train import ArrayDataset

    g = torch.Generator().manual_seed(0)
    n, tokens = PROBE["samples"], 24

    def sample(k):
        return ArrayDataset(values=torch.randn(k, tokens, 2, generator=g),
                            positions=torch.rand(k, 1, tokens, generator=g).sort(-1).values * 10)

    data, val = sample(n), sample(8)
    cfg = RoMAEConfig(token_dim=2, n_axes=1, encoder=size("tiny-shallow", dropout=0.1, drop_path=0.1),
                      decoder=size("tiny-shallow"), mask_ratio=0.5)
    train = TrainConfig(epochs=PROBE["epochs"], batch_size=PROBE["batch"], lr=1e-3, warmup_steps=3, grad_clip=1.0,
                        eval_every=PROBE["eval_every"], log_every=1, progress=False, seed=0, bf16=precision == "bf16")
    return (lambda: RoMAEForPreTraining(cfg, seed=0)), data, val, train


def graphed_against_eager(dev: torch.device, precision: str = "fp32") -> dict:
    """The probe (`probe_training`) trained by `fit` with and without CUDA graphs from one seed: losses and final
    weights side by side, within TOLERANCE, and the graphed run's `cuda_graphs` history row, which must say at least
    one graph per batch shape replayed and no failed capture (a run that fell back to eager steps is no comparison).
    Status 'equal within tolerance', or 'DIFFERS' / 'NOT GRAPHED' with why."""
    from ..train import fit

    make, data, val, train = probe_training(precision)
    runs, rows = {}, {}
    for name, on in (("eager", False), ("graphed", True)):
        res = fit(make(), data, dataclasses.replace(train, cuda_graphs=on), val_data=val, device=str(dev))
        runs[name] = ([r["loss"] for r in res.history if "loss" in r], res.model.state_dict())
        rows[name] = next((r for r in res.history if r.get("event") == "cuda_graphs"), None)
    (le, we), (lg, wg) = runs["eager"], runs["graphed"]
    if len(le) != len(lg) or not le:
        return dict(status=f"DIFFERS: {len(le)} eager losses against {len(lg)} graphed", cuda_graphs=rows["graphed"])
    loss_rel = max(abs(a - b) / max(abs(a), 1e-12) for a, b in zip(le, lg))
    weight_rel = max(float((we[k].float() - wg[k].float()).norm() / we[k].float().norm().clamp(min=1e-12))
                     for k in we if we[k].is_floating_point())
    row = rows["graphed"]
    shapes = 2  # whole batches and the short last one
    why_not = ("no cuda_graphs row in the graphed run's history" if row is None else
               f"the capture failed: {row['capture_failed']}" if row.get("capture_failed") else
               f"{row.get('graphs', 0)} graph(s) for {shapes} batch shapes" if row.get("graphs", 0) < shapes else
               "no step replayed" if not row.get("replayed_steps") else "")
    ok = max(loss_rel, weight_rel) <= TOLERANCE[precision]
    status = f"NOT GRAPHED: {why_not}" if why_not else "equal within tolerance" if ok else \
        f"DIFFERS: max relative difference {max(loss_rel, weight_rel):.2e} > {TOLERANCE[precision]:g}"
    return dict(steps=len(le), losses_eager=le, losses_graphed=lg, max_loss_rel_diff=loss_rel,
                max_weight_rel_diff=weight_rel, tolerance=TOLERANCE[precision], cuda_graphs=row, status=status,
                probe="pre-training: random masks, dropout 0.1, drop path 0.1, grad clip 1.0, 2 batch shapes, "
                      "validation every 3 steps")


AT_RISK = (("10", "RoPE, [CLS]: fine-tuning", "bf16"), ("13", "RoMAE-tiny-shallow fine-tuning", "fp32"))


def memory_at_risk(dev: torch.device) -> list[dict]:
    """The paper trainings whose graphs' pools the plan said may not fit (issue 55: notebook 10's BF16 fine-tuning,
    56 GiB planned eager, about 92 GiB graphed; 13's tiny-shallow fine-tuning), one epoch of WARMUP + 1 whole
    batches and a short last one (the peak: the short batch's eager warm-up beside the first graph's pool), with
    graphs on and off: peak allocated and reserved GiB beside the plan's eager and graphed peaks. 13's real batches
    come from a TokenStore, which `graphs.fits` refuses: its graphed row says what graphs would cost, not what runs."""
    from ..model import RoMAEForPrediction, RoMAEForPreTraining
    from ..train import ArrayDataset, fit

    experiments.load()
    rows = []
    for nb, name, precision in AT_RISK:
        t = next(x for x in plan.paper_trainings(nb, 1) if x.name == name)
        mem = plan.memory(t, bf16=precision == "bf16", kernel=plan.training_kernel(t, precision, plan.planned_device()))
        b = t.train.batch_size
        data = ArrayDataset(**plan._batch(t.shape_model, t.stage, b * (graphs.WARMUP + 1) + b // 2, t.n_tokens,
                                          t.padded))
        for on in (False, True):
            row = dict(notebook=nb, training=name, precision=precision, batch=b, cuda_graphs=on,
                       planned_peak_gib=round(mem.peak_gib(b), 1), planned_graphed_peak_gib=round(
                           mem.graphed_peak_gib(b), 1))
            try:
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats(dev)
                cfg = dataclasses.replace(t.train, epochs=1, micro_batch=None, progress=False, log_every=100,
                                          bf16=precision == "bf16", cuda_graphs=on, checkpoint_every=None)
                net = (RoMAEForPrediction if t.stage == "finetune" else RoMAEForPreTraining)(t.shape_model, seed=0)
                res = fit(net, data, cfg, device=str(dev))
                row.update(peak_allocated_gib=round(torch.cuda.max_memory_allocated(dev) / 2 ** 30, 1),
                           peak_reserved_gib=round(torch.cuda.max_memory_reserved(dev) / 2 ** 30, 1),
                           graphs=next((r.get("graphs") for r in res.history if r.get("event") == "cuda_graphs"), 0))
                del net, res
            except Exception as e:  # an OOM is the finding
                row.update(error=f"{type(e).__name__}: {str(e).splitlines()[0][:200]}")
            rows.append(row)
            print(json.dumps(row), flush=True)
        del data
    return rows


# float rounding (the learning rate read from a float32 tensor) compounding over 20 steps; BF16 rounds coarser
TOLERANCE = {"fp32": 1e-4, "bf16": 1e-2}


def attention_kernels(dev: torch.device) -> dict:
    """Which SDPA backends run a padded BF16 batch (a boolean key mask) at head size 60 and 64."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    out = {}
    for hd in (60, 64):
        q, k, v = (torch.randn(8, 3, 197, hd, device=dev, dtype=torch.bfloat16) for _ in range(3))
        mask = torch.ones(8, 1, 1, 197, dtype=torch.bool, device=dev)
        mask[:, ..., 150:] = False
        row = {}
        for backend in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH"):
            try:
                with warnings.catch_warnings(), sdpa_kernel(getattr(SDPBackend, backend)):
                    warnings.simplefilter("ignore")
                    torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
                row[backend.lower()] = "runs"
            except RuntimeError as e:
                row[backend.lower()] = "refused: " + str(e).splitlines()[0][:80]
        out[f"head {hd}"] = row
    return out


def run(device: str = "cuda", steps: int = 30, only=None, precisions=("fp32", "bf16"), equal: bool = True,
        what: str = "all") -> dict:
    """`what`: "all" (the timings, then the probe unless not `equal`), "probe" (graphed against eager only),
    "memory" (`memory_at_risk`)."""
    dev = torch.device(device)
    if what == "probe":
        return dict(device=_device_name(dev), stack=runtime.stack_label(),
                    graphed_against_eager={p: graphed_against_eager(dev, p) for p in precisions
                                           if p == "fp32" or dev.type == "cuda"})
    if what == "memory":
        return dict(device=_device_name(dev), stack=runtime.stack_label(), memory_at_risk=memory_at_risk(dev))
    rows = []
    for name, t in workloads().items():
        if only and name not in only:
            continue
        for precision in precisions:
            if precision == "bf16" and dev.type == "cpu":
                continue
            for label, on, graphed in VARIANTS:
                if graphed and dev.type != "cuda":
                    continue
                row = dict(workload=name, precision=precision, variant=label)
                try:
                    row.update(measure_variant(t, dev, precision, on, graphed, steps))
                except Exception as e:  # one variant failing is a result: said, and the others still measured
                    row.update(error=f"{type(e).__name__}: {str(e)[:300]}")
                rows.append(row)
                print(json.dumps(row), flush=True)
    for r in rows:  # speed-up of each variant over the eager step before issue 44, per workload and precision
        base = next((b for b in rows if b["workload"] == r["workload"] and b["precision"] == r["precision"]
                     and b["variant"] == VARIANTS[0][0] and "ms_per_step" in b), None)
        if base and "ms_per_step" in r:
            r["speedup"] = base["ms_per_step"] / r["ms_per_step"]
    result = dict(device=_device_name(dev), stack=runtime.stack_label(), steps=steps, rows=rows)
    if dev.type == "cuda":
        result["attention_kernels_bf16_padded"] = attention_kernels(dev)
        if equal:
            result["graphed_against_eager"] = {}
            for p in precisions:
                try:
                    result["graphed_against_eager"][p] = graphed_against_eager(dev, p)
                except Exception as e:
                    result["graphed_against_eager"][p] = dict(status=f"FAILED: {type(e).__name__}: {str(e)[:300]}")
    return result


def _device_name(dev: torch.device) -> str:
    return runtime.accelerator_name() if dev.type == "cuda" else "cpu"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m romae.runner.launch", description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--only", action="append", help="a workload's name (repeatable); default all")
    ap.add_argument("--out", help="write the JSON result here")
    ap.add_argument("--what", choices=("all", "timings", "probe", "memory"), default="all",
                    help="all: timings and the probe; timings: without the probe; probe: graphed against eager only; "
                         "memory: the rows at risk (informational: exit 0)")
    args = ap.parse_args(argv)
    if args.steps < 1:
        ap.error(f"--steps must be at least 1, got {args.steps}")
    result = run(args.device, args.steps, args.only, equal=args.what != "timings",
                 what="all" if args.what == "timings" else args.what)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2, default=str) + "\n")
    bad = [r for r in result.get("rows", []) if "error" in r] + \
        [v for v in result.get("graphed_against_eager", {}).values() if v.get("status") != "equal within tolerance"]
    for p, v in result.get("graphed_against_eager", {}).items():
        print(f"graphed against eager ({p}): {v.get('status')}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["attention_kernels", "graphed_against_eager", "memory_at_risk", "probe_training", "run", "workloads"]
