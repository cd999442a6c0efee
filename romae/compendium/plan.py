"""A plan before the run: what each notebook's paper profile trains, how much memory a device needs, which
micro-batch fits, and how long it takes.

    python -m romae.runner.bench plan --profile paper --device h100 --gpu-memory 80
    plan.show("12", profile)                  # a notebook's first cells: its own plan (paper profile only)
    plan.fit_memory(train_cfg, model_cfg, n_tokens, "pretrain", profile)   # TrainConfig with the planned micro-batch

Trainings come from each experiment module's `paper_trainings()`, built with the module's own config
functions (the real RoMAEConfig and TrainConfig of the run); dataset sizes are the paper's, as constants
with their source where the data may be absent, so the plan is the same on every machine.

How much memory and time one training takes is `romae.compendium.footprint`'s (re-exported here:
`plan.fit_memory`, `plan.Training`, ... keep working); the README's copy of the plan is written by
`romae.runner.plantables`.
"""

from __future__ import annotations

import itertools

import torch

from . import cost
# the memory and time of one training, importable from here as before
from .footprint import (CHECKPOINT_MINUTES, CODE, CONTEXT_GIB, CPU_FACTOR, DEVICES, EFFICIENCY,  # noqa: F401
                        FEED_MEASURED, FEEDS, GIB, GRAPH_SHAPES, GRAPHED, HEADROOM, OPTIMIZER_COPIES, OVERHEAD, PEAK,
                        PRECISIONS, Memory, graphable, pools_fit,
                        Training, _batch, _code_version, _feed_here, _image_shape, _measured, _model, _n_params,
                        _precision, _saved_bytes, _speed_here, attention_kernel, blocks, check, checkpoint_steps,
                        device_memory_gib, feed_seconds, fit_memory, hidden_of, is_padded, memory,
                        pick_micro_batch, planned_device, step_seconds, tokens_of, training_kernel,
                        training_seconds)

# notebook -> its experiment's paper_trainings(), registered by the experiment module when it is imported
# (`register`); the whole-paper plan imports every experiment first (`romae.runner.experiments.load`). 00 and 03
# train nothing.
_REGISTERED: dict[str, tuple] = {}


def register(notebook: str, paper_trainings, split_batch: bool = False) -> None:
    """Notebook `notebook`'s paper trainings come from `paper_trainings()` (`split_batch`: its global batch is split
    over `gpus` processes, passed as `processes`)."""
    _REGISTERED[notebook] = (paper_trainings, split_batch)


def notebooks() -> list[str]:
    """The notebooks whose experiment has registered its trainings in this process, in order."""
    return sorted(_REGISTERED)


def paper_trainings(notebook: str, gpus: int = 1) -> list[Training]:
    """The paper profile's trainings of one notebook ([] for one that trains nothing, or whose experiment this process
    has not imported: `romae.runner.experiments.load()` imports them all)."""
    if notebook not in _REGISTERED:
        return []
    make, split = _REGISTERED[notebook]
    return make(**({"processes": gpus} if split else {}))


# ----------------------------------------------------------------------------- the plan

def plan(device: str = "h100", gpus: int = 1, memory_gib: float | None = None, precisions=PRECISIONS,
         only=None, checked: bool = True) -> dict:
    """Every paper training of the notebooks (`only`: their numbers, default all) with steps, FLOPs, memory,
    micro-batch and hours per precision -> {settings, rows, totals}. memory_gib None: whole batches."""
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; choose one of {DEVICES}")
    bad = [p for p in precisions if p not in PRECISIONS]
    if bad or not precisions:
        raise ValueError(f"unknown precisions {bad}; choose from {PRECISIONS}")
    if gpus < 1 or (memory_gib is not None and not memory_gib > 0):
        raise ValueError(f"gpus must be >= 1 and gpu memory > 0, got {gpus}, {memory_gib}")
    known = notebooks()
    wanted = {str(n).strip().zfill(2) for n in (only or known)}
    unknown = sorted(n for n in wanted if n not in known and n not in ("00", "03"))
    if unknown:
        raise ValueError(f"unknown notebooks {unknown}; the ones that train (their experiments imported): "
                         f"{', '.join(known)}")
    notebooks_ = [n for n in known if n in wanted]
    rows = []
    for nb in notebooks_:
        for t in paper_trainings(nb, gpus):
            row = dict(notebook=nb, name=t.name, stage=t.stage, runs=t.runs, tokens=t.tokens, padded=t.padded,
                       samples=t.samples, batch=t.train.batch_size * t.processes, processes=t.processes,
                       steps=t.steps, flops=t.runs * t.steps * t.processes * cost.step_flops(
                           t.shape_model, t.train.batch_size, t.n_tokens, t.stage), source=t.source, precision={})
            for p in precisions:
                kernel = training_kernel(t, p, device)
                mem = memory(t, bf16=p == "bf16", kernel=kernel)
                micro, k = pick_micro_batch(t.train.batch_size, mem, memory_gib)
                s = None if micro is None else step_seconds(t, device, p, k)
                eager = None if micro is None else step_seconds(t, device, p, k, graphed=False)
                feed = feed_seconds(t, device) if s is not None else None
                if s is not None:  # a GPU trains while a thread builds the next batch; the CPU does one, then the other
                    s, eager = (max(s, feed), max(eager, feed)) if device in PEAK else (s + feed, eager + feed)
                at = micro or 1
                # 1 and 2 are the points of the line; TF32's counts are FP32's
                checked_at = at if checked and at > 2 and p != "tf32" else None
                no_graphs = graphable(t, k) or (pools_fit(mem, at, memory_gib) if micro else "")
                if device in PEAK and s is not None and not graphable(t, k) and no_graphs:  # eager: pools do not fit
                    s = eager
                row["precision"][p] = dict(micro=micro, k=k, peak_gib=mem.peak_gib(at), check_micro=checked_at,
                                           check_error=None if checked_at is None else check(t, mem, at, p == "bf16",
                                                                                            kernel),
                                           hours=None if s is None else t.runs * t.steps * s / 3600, kernel=kernel,
                                           feed_seconds=feed, graphed=device in PEAK and not no_graphs,
                                           not_graphed=no_graphs if device in PEAK else "",
                                           graphed_peak_gib=mem.graphed_peak_gib(at) if device in PEAK else None,
                                           eager_hours=None if eager is None else t.runs * t.steps * eager / 3600)
            rows.append(row)
    totals = {}
    for nb in [*dict.fromkeys(r["notebook"] for r in rows), "all"]:
        mine = [r for r in rows if nb in ("all", r["notebook"])]
        totals[nb] = {p: _total([r["precision"][p]["hours"] for r in mine]) for p in precisions}
    eager = {p: _total([r["precision"][p]["eager_hours"] for r in rows]) for p in precisions}
    return dict(settings=dict(device=device, gpus=gpus, memory_gib=memory_gib, precisions=list(precisions),
                              headroom=HEADROOM, context_gib=CONTEXT_GIB, efficiency=EFFICIENCY, overhead=OVERHEAD,
                              graphed=GRAPHED, peak=PEAK.get(device)), rows=rows, totals=totals, eager_totals=eager)


def _total(hours: list) -> float | None:
    """Sum of hours; None if any training has none (does not fit, or not modelled)."""
    return None if any(h is None for h in hours) else sum(hours)


def _hours(h: float | None) -> str:
    return "-" if h is None else f"{h:,.1f}" if h >= 0.1 else "<0.1"


def table(p: dict, markdown: bool = False) -> str:
    """The plan as a text (or markdown) table: one row per training, totals per notebook and overall. Memory and
    micro-batch columns: the first precision's, and BF16's when it is planned too."""
    precs = p["settings"]["precisions"]
    mems = list(dict.fromkeys([precs[0]] + (["bf16"] if "bf16" in precs else [])))
    gpu = p["settings"]["device"] in PEAK
    head = (["nb", "training", "runs", "tokens", "samples", "batch", "steps", "PFLOP", "feed s"]
            + [c for q in mems for c in (f"attention ({q})", f"micro x k ({q})", f"peak GiB ({q})")]
            + (["graphs"] if gpu else []) + [f"h {q}" for q in precs])

    def total(nb: str, totals=None, label="total") -> list[str]:
        totals = totals or p["totals"][nb]
        return [nb, label] + [""] * (len(head) - 2 - len(precs)) + [_hours(totals[q]) for q in precs]

    lines = []
    for nb, rows in itertools.groupby(p["rows"], key=lambda r: r["notebook"]):
        for r in rows:
            cells = [nb, r["name"], str(r["runs"]), ("<=" if r["padded"] else "") + str(r["tokens"]),
                     f"{r['samples']:,}", f"{r['batch']:,}", f"{r['steps']:,}", f"{r['flops'] / 1e15:,.1f}",
                     _feed(r["precision"][precs[0]].get("feed_seconds"))]
            for x in (r["precision"][q] for q in mems):
                cells += [x.get("kernel", "")] + (["does not fit", f"{x['peak_gib']:.1f} at 1"] if x["micro"] is None
                                                  else [f"{x['micro']:,} x {x['k']}", f"{x['peak_gib']:.1f}"])
            if gpu:  # replayed from CUDA graphs at the last precision (where a micro-batch is needed, eager)
                x = r["precision"][precs[-1]]
                cells.append("yes" if x.get("graphed") else f"no: {x.get('not_graphed') or 'does not fit'}")
            lines.append(cells + [_hours(r["precision"][q]["hours"]) for q in precs])
        lines.append(total(nb))
    lines.append(total("all"))
    if gpu and p.get("eager_totals"):
        lines.append(total("all", p["eager_totals"], "total, eager (cuda_graphs=False)"))
    if markdown:
        rule = "|" + "|".join("---" if i < 2 else "---:" for i in range(len(head))) + "|"
        row = lambda cells: "| " + " | ".join(cells) + " |"  # noqa: E731
        return "\n".join([row(head), rule] + [row(c) for c in lines])
    widths = [max(len(c[i]) for c in [head] + lines) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
                     for cells in [head] + lines)


def _feed(seconds: float | None) -> str:
    return "-" if not seconds else f"{seconds:.2g}"


CPU_SCOPE_HOURS = 2.5  # a single training longer than this is out of scope on a CPU: a GPU's work (issue 32)


def out_of_scope(p: dict) -> list[str]:
    """On a CPU plan ('cpu', 'this'): '<nb> <training> (x.x h each)' for every training one run of which takes
    longer than CPU_SCOPE_HOURS in FP32 (or has no time); [] on a GPU plan."""
    if p["settings"]["device"] not in ("cpu", "this"):
        return []
    out = []
    for r in p["rows"]:
        hours = r["precision"].get("fp32", {}).get("hours")
        each = None if hours is None else hours / r["runs"]
        if each is None or each > CPU_SCOPE_HOURS:
            out.append(f"{r['notebook']} {r['name']} ({'no time' if each is None else f'{each:.1f} h'} each)")
    return out


def describe(p: dict) -> str:
    """The lines above and below the table: the setting, how memory and time were obtained, the check; on a CPU,
    the trainings too long for it (`out_of_scope`)."""
    s = p["settings"]
    scope = out_of_scope(p)
    scope_line = ([f"Out of scope on a CPU (one training over {CPU_SCOPE_HOURS:g} h; a GPU's work): "
                   + "; ".join(scope) + "."] if scope else
                  [f"Every training here takes at most {CPU_SCOPE_HOURS:g} h on its own: in scope on a CPU, run "
                   "in pieces (romae.compendium.trainings keeps each finished one)."] if s["device"] in ("cpu", "this") else [])
    errors = [abs(x["check_error"]) for r in p["rows"] for x in r["precision"].values() if x["check_error"] is not None]
    where = {"cpu": f"the reference {cost.REFERENCE} (romae.compendium.cost's fitted model x {CPU_FACTOR:g}, the ratio its paper "
                    "trainings measured against it; FP32 only)",
             "this": "this machine, scaled from a 2-sample step measured here (FP32 only)"}.get(s["device"])
    efficiency = ", ".join(f"{k} {v:g}" for k, v in s["efficiency"].items())
    block = ", ".join(f"{k} {1e3 * v:g}" for k, v in s["overhead"]["block"].items())
    g = s.get("graphed") or GRAPHED
    time_note = where or (f"{s['device'].upper()}: ESTIMATES. Eager steps, calibrated on an NVIDIA H200 (the plan against "
                          f"measurement of `make gpu-check`: 25 of 30 steps within 25 %): FLOPs / (NVIDIA's peak dense "
                          f"FLOP/s x an efficiency {efficiency}) + ms per transformer block and micro-batch ({block}; "
                          f"kernel launches) + {1e3 * s['overhead']['micro']:g} ms per micro-batch + "
                          f"{1e3 * s['overhead']['step']:g} ms per step. Steps replayed from CUDA graphs (graphs: yes; "
                          f"TrainConfig.cuda_graphs, the default where it applies): the FLOPs' time + "
                          f"{1e6 * g['kernel']:g} us per kernel (the eager launch time / {1e6 * g['launch']:g} us a "
                          f"launch), at least {1e3 * g['host']:g} ms a step for the host's loop; NOT YET MEASURED on a "
                          "GPU (the eager figures were). A graphed training's peak counts a private pool per batch shape "
                          f"({GRAPH_SHAPES}: whole batches and a short last one); where those do not fit, its steps are "
                          "eager, in the plan and at run time (`fit_memory` sets cuda_graphs=False)")
    mem = ("no device memory given: whole batches" if s["memory_gib"] is None else
           f"{s['memory_gib']:g} GiB per device; planned peak = {s['headroom']:g} x (parameters + gradients + "
           f"optimiser state + saved activations) + {s['context_gib']:g} GiB")
    return "\n".join([
        f"Paper profile on {s['gpus']} device(s) ({', '.join(n for n, (_, split) in sorted(_REGISTERED.items()) if split)}"
        " split their global batch over them; the "
        f"others train on one). Memory: {mem}. Time: {time_note}.",
        "Saved activations measured on the CPU at micro-batches 1 and 2 and extrapolated linearly"
        + (f"; checked by a measurement at every chosen micro-batch above 2 ({len(errors)} points): largest error "
           f"{100 * max(errors):.2g} %" if errors else "")
        + ". tokens include [CLS]; <= : padded data at its longest sample (memory and FLOPs are upper bounds). "
        "batch: the global batch; micro x k: per device, k micro-batches a step. PFLOP: all runs of the row. "
        "h: hours for all runs of the row, one after another. feed s: the host's seconds to build one device's "
        "batch (ELAsTiCC's TokenStore; Tiny ImageNet's images: gathered, and on a CPU also augmented and resized), "
        + ("measured here" if s["device"] == "this" else "measured on the compendium's 2-core CPU")
        + (": a GPU step takes the longer of it and the step (a thread builds the next batch)" if s["device"] in PEAK
           else ": added to each step")
        + "; - : tensors, nothing to build.", *scope_line])


def show(notebook: str, profile: str, gpus: int = 1) -> None:
    """Print notebook `notebook`'s plan for this machine (paper profile only; otherwise nothing)."""
    if profile != "paper":
        return
    from .. import runtime

    on_gpu = runtime.current().device != "cpu" and torch.cuda.is_available()  # DEVICE=cpu: the CPU's plan
    name = torch.cuda.get_device_name(0) if on_gpu else ""
    device = "a100" if "A100" in name else "h100" if name else "cpu"
    p = plan(device, gpus, device_memory_gib(), only=[notebook], checked=False,
             precisions=PRECISIONS if name else ("fp32",))
    if name and "H100" not in name and "A100" not in name:
        print(f"{name} is not in the plan's table: times below are for an H100")
    print(describe(p))
    print(table(p))
    from . import terminal

    runs = sum(r["runs"] for r in p["rows"])
    hours = p["totals"].get(notebook, {}).get("fp32")
    if notebook not in COUNTS_ITS_OWN:
        terminal.expect(runs, planned=None if hours is None else hours * 3600)
    where = "on this device" if name else "on the reference CPU (romae.compendium.cost; this one may be slower)"
    terminal.say(f"plan (paper profile, {name or 'this CPU'}): {len(p['rows'])} trainings x their seeds = {runs} runs, "
                 + (f"about {_hours(hours)} h in FP32 {where}" if hours is not None else "FP32 does not fit")
                 + (f"; {COUNTS_ITS_OWN[notebook]}" if notebook in COUNTS_ITS_OWN else ""))


# notebooks whose experiment counts its trainings itself as it reaches them (`terminal.expect(..., more=True)`):
# the plan lists every data set of the paper's table, of which only those under the data root run, so its count and
# hours would be the progress line's total and time left for data sets that never train (12 with BasicMotions
# alone: "1/93 ... about 40 h left" for 18 trainings and 25 minutes)
COUNTS_ITS_OWN = {"12": "these are all of Table 6's data sets: the progress lines count those present as they start"}
