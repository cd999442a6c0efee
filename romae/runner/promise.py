"""What the plan promised, measured: every paper training for a few steps at its planned micro-batch,
accumulation and precision, on generated tokens of its shapes, beside the plan's memory and time.

    python -m romae.runner.promise --device cuda --out reports/gpu          # `make gpu-check` runs it on a GPU
    python -m romae.runner.promise --device this --readme docs/reproducing.md   # the CPU twin: this machine's plan

On CUDA (the plan for this GPU: `plan.planned_device()`, its memory), per training and precision (FP32, BF16):
the attention kernel and micro-batch x accumulation the plan picks, `torch.cuda.max_memory_allocated` over a
few optimiser steps against the planned peak, and the measured step time against the planned one. A row
fails where the measured peak exceeds the plan or the time is more than 2x off either way.

On the CPU (`--device this`), FP32 only, against the reference CPU's time model (`romae.compendium.cost`; the plan's
`cpu` device): a training whose planned step takes at most CPU_WHOLE_SECONDS runs whole; a longer one runs
micro-batches of at most `CPU_MICRO` samples and its step time is the time per micro-batch x the micro-batches
of the planned step (said in the row: "ran 4"), which overstates small models (fixed costs per micro-batch). The CPU has no allocator statistics: memory is not measured there.

Trainings run in a round robin over the notebooks (one of each notebook first) until the time budget is
spent; the rest are listed as not measured ("sampled"). Weights and data are generated: only shapes matter.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from ..compendium import plan
from . import experiments
from .. import runtime
from ..compendium.cost import minutes

CPU_MICRO = 4  # samples per micro-batch measured on the CPU where the planned step is long
CPU_WHOLE_SECONDS = 5.0  # a planned step up to this long runs whole on the CPU (its real micro-batch)
TIME_FACTOR = 2.0  # a measured step time more than this factor from the plan's fails
README_BEGIN, README_END = "<!-- promise:begin -->", "<!-- promise:end -->"


def _order(notebooks) -> list[tuple[str, plan.Training]]:
    """Every paper training, one per notebook in turn (so a short budget still samples every notebook)."""
    experiments.load()
    lists = [[(nb, t) for t in plan.paper_trainings(nb)] for nb in notebooks]
    out = []
    while any(lists):
        out += [lst.pop(0) for lst in lists if lst]
    return out


def _step(model, optimizer, batch: dict, k: int, precision: str, device: torch.device) -> float:
    """Seconds of one optimiser step of k micro-batches (the same one k times), synchronised."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    t0 = time.perf_counter()
    optimizer.zero_grad(set_to_none=True)
    for _ in range(k):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
            _, loss = model(**batch)
        loss.backward()
    optimizer.step()
    sync()
    return time.perf_counter() - t0


def measure_one(t: plan.Training, precision: str, device: str, memory_gib: float | None, steps: int = 3) -> dict:
    """One training at one precision: the plan's choices and promise, and what a few steps measured."""
    from ..model import RoMAEForPrediction, RoMAEForPreTraining
    from ..train import _make_optimizer, _matmul_precision

    on_gpu = device == "cuda"
    planned = plan.planned_device() if on_gpu else "cpu"
    kernel = plan.training_kernel(t, precision, planned)
    mem = plan.memory(t, bf16=precision == "bf16", kernel=kernel)
    micro, k = plan.pick_micro_batch(t.train.batch_size, mem, memory_gib if on_gpu else None)
    row = dict(training=t.name, stage=t.stage, precision=precision, kernel=kernel, batch=t.train.batch_size,
               micro=micro, k=k, planned_peak_gib=None if micro is None else round(mem.peak_gib(micro), 2))
    if micro is None:
        return dict(row, status="does not fit (plan)")
    planned_seconds = plan.step_seconds(t, planned, precision, k, graphed=False)  # _step runs eager steps
    whole = on_gpu or (planned_seconds or 0) <= CPU_WHOLE_SECONDS
    run_micro, run_k = (micro, k) if whole else (min(micro, CPU_MICRO), 1)
    dev = torch.device(device if on_gpu else "cpu")
    with torch.random.fork_rng(devices=[dev] if on_gpu else []):
        torch.manual_seed(0)
        model = (RoMAEForPreTraining if t.stage == "pretrain" else RoMAEForPrediction)(t.shape_model).to(dev).train()
        optimizer = _make_optimizer(model.parameters(), t.train)
        batch = {key: v.to(dev) for key, v in plan._batch(t.shape_model, t.stage, run_micro, t.n_tokens,
                                                           t.padded).items()}
        if on_gpu:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(dev)
        with _matmul_precision(precision):
            times = [_step(model, optimizer, batch, run_k, precision, dev) for _ in range(steps + 1)][1:]
        peak = torch.cuda.max_memory_allocated(dev) / plan.GIB if on_gpu else None
        reserved = torch.cuda.max_memory_reserved(dev) / plan.GIB if on_gpu else None  # the allocator's hold
        del model, optimizer, batch
    seconds = sorted(times)[len(times) // 2]
    if not whole:  # micro-batches of CPU_MICRO: the planned step has batch / run_micro of them
        seconds *= t.train.batch_size / run_micro
    ratio = None if not planned_seconds else seconds / planned_seconds
    problems = []
    if peak is not None and row["planned_peak_gib"] is not None and peak > row["planned_peak_gib"]:
        problems.append("peak above the plan")
    if ratio is not None and not 1 / TIME_FACTOR <= ratio <= TIME_FACTOR:
        problems.append(f"time {ratio:.2f}x the plan's")
    return dict(row, measured_micro=run_micro, measured_peak_gib=None if peak is None else round(peak, 2),
                measured_reserved_gib=None if reserved is None else round(reserved, 2),
                planned_seconds=planned_seconds, measured_seconds=seconds, time_ratio=ratio,
                status="; ".join(problems) or "ok")


def measure(device: str = "this", notebooks=None, budget_minutes: float = 15.0, steps: int = 3,
            on_row=None) -> dict:
    """Every paper training of `notebooks` (default all) within the budget -> {settings, rows, sampled}.
    `on_row(result so far)` after each row (the rest listed as not measured yet), so that a run stopped from
    outside loses nothing it measured."""
    on_gpu = device == "cuda"
    if on_gpu and not torch.cuda.is_available():
        raise RuntimeError("--device cuda: torch sees no CUDA GPU here; use --device this for the CPU twin")
    memory_gib = plan.device_memory_gib() if on_gpu else None
    precisions = ("fp32", "bf16") if on_gpu else ("fp32",)
    settings = dict(device=runtime.accelerator_name() if on_gpu else f"cpu ({runtime.stack_label()})",
                    planned=plan.planned_device() if on_gpu else "cpu (reference CPU time model)",
                    memory_gib=memory_gib, steps=steps, budget_minutes=budget_minutes,
                    cpu_micro=None if on_gpu else CPU_MICRO, torch=torch.__version__)
    deadline = time.monotonic() + 60 * budget_minutes
    order = [(nb, t, p) for nb, t in _order(notebooks or list(experiments.load())) for p in precisions]
    labels = [f"{nb} {t.name} ({p})" for nb, t, p in order]
    rows, left = [], []
    for i, (nb, t, p) in enumerate(order):
        if time.monotonic() > deadline:
            left.append(labels[i])
            continue
        print(f"  {labels[i]} ...", end=" ", flush=True)
        try:
            row = measure_one(t, p, device, memory_gib, steps)
        except torch.cuda.OutOfMemoryError as e:  # its first sentence: how much it asked for, the card, what was free
            row = dict(training=t.name, stage=t.stage, precision=p,
                       status="out of memory: " + " ".join(str(e).split(". Of the allocated")[0].split()))
        if on_gpu:  # each row starts from an empty cache
            torch.cuda.empty_cache()
        rows.append(dict(notebook=nb, **row))
        print(row["status"], flush=True)
        if on_row is not None:  # what the round robin has not reached yet counts as not measured
            on_row(dict(settings=settings, rows=rows, sampled=left + labels[i + 1:]))
    return dict(settings=settings, rows=rows, sampled=left)


def _num(x, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def table(result: dict) -> str:
    """The measurements as a markdown table, with what was left out."""
    head = ["nb", "training", "prec.", "attention", "micro x k", "peak GiB plan / measured",
            "step s plan / measured", "ratio", "status"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in result["rows"]:
        micro = "-" if r.get("micro") is None else f"{r['micro']:,} x {r['k']}"
        if r.get("measured_micro") not in (None, r.get("micro")):
            micro += f" (ran {r['measured_micro']})"
        lines.append("| " + " | ".join([
            r["notebook"], r["training"], r["precision"], r.get("kernel", "-"), micro,
            f"{_num(r.get('planned_peak_gib'), '.1f')} / {_num(r.get('measured_peak_gib'), '.1f')}",
            f"{_num(r.get('planned_seconds'), '.3g')} / {_num(r.get('measured_seconds'), '.3g')}",
            _num(r.get("time_ratio"), ".2f"), r["status"]]) + " |")
    s = result["settings"]
    text = (f"Measured on {s['device']} against the plan for {s['planned']}, {s['steps']} steps per training "
            + (f"(on the CPU, planned steps over {CPU_WHOLE_SECONDS:g} s in micro-batches of at most {s['cpu_micro']}, "
               "marked 'ran', the step time scaled to the planned batch; no memory statistics on the CPU)"
               if s.get("cpu_micro") else "") + ".\n\n" + "\n".join(lines))
    if result["sampled"]:
        text += (f"\n\nNot measured within the {s['budget_minutes']:g}-minute budget (sampled): "
                 + "; ".join(result["sampled"]) + ".")
    return text + "\n"


def write_readme(path: str | Path, result: dict, command: str) -> None:
    """Replace the text between README_BEGIN and README_END in `path` with the command and the table."""
    path = Path(path)
    text = path.read_text()
    if README_BEGIN not in text or README_END not in text:
        raise ValueError(f"{path} has no {README_BEGIN} ... {README_END} markers")
    head, rest = text.split(README_BEGIN, 1)
    path.write_text(f"{head}{README_BEGIN}\n`{command}` wrote this table.\n\n{table(result)}"
                    f"{README_END}{rest.split(README_END, 1)[1]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m romae.runner.promise", description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=("cuda", "this"), default="this")
    ap.add_argument("--only", default=None, help="comma-separated notebook numbers (default: every training one)")
    ap.add_argument("--budget-minutes", type=float, default=15.0)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--out", default=None, help="folder for promise.json and promise.md")
    ap.add_argument("--readme", default=None, help="write the table between the promise markers of this Markdown file (docs/reproducing.md)")
    args = ap.parse_args(argv)
    notebooks = [n.strip().zfill(2) for n in args.only.split(",")] if args.only else None
    t0 = time.monotonic()

    def write(result):  # after each row too: a run stopped from outside keeps what it measured
        if args.out:
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            (out / "promise.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
            (out / "promise.md").write_text(table(result))

    result = measure(args.device, notebooks, args.budget_minutes, args.steps, on_row=write)
    print(table(result))
    write(result)
    if args.readme:
        command = "python -m romae.runner.promise --device " + args.device + (f" --only {args.only}" if args.only else "") \
            + f" --budget-minutes {args.budget_minutes:g} --readme {args.readme}"
        write_readme(args.readme, result, command)
    print(f"== {len(result['rows'])} measured, {len(result['sampled'])} not (budget) in "
          f"{minutes(time.monotonic() - t0)}", flush=True)
    failed = [r for r in result["rows"] if r["status"] != "ok"]
    return 1 if args.device == "cuda" and failed else 0


if __name__ == "__main__":
    sys.exit(main())
