"""Compute cost: model sizes (Table 8), relative speed of positional encodings (Table 9), the roofline
of a training step, and the cost of attention against sequence length (the limitation named in Sec. 6).

    res = run("smoke", reports_dir=...)   # -> dict of DataFrames: table8, table9, roofline, sweep, slopes

Table 8 and Table 9 come from `romae.compendium.measure` (`size_rows`, `table9`); this module only runs them with a
profile, caches the timings and records the rows. The roofline (`romae.compendium.measure.roofline`) puts each
workload's training step against the speed of its own matrix products run alone: the fraction says
how much of the step is matmul work at full speed. The sequence-length sweep is new here: it times one
training step (forward + backward + AdamW) of a RoMAE encoder with continuous 1-D RoPE for growing
token counts N, with PyTorch's default attention kernel (fused, O(N) memory) and with the explicit
"math" kernel (the N x N attention matrix of standard attention, what the paper's O(N^2) refers to).

Memory, two measures:
* `activation_MB` (every device): bytes of the tensors autograd saves for the backward pass during
  the forward (a `saved_tensors_hooks` pack hook, deduplicated by storage, parameters excluded). It is
  exact, noise-free and the part of training memory that grows with N: with the math kernel it holds
  the N x N attention probabilities of every layer. PyTorch keeps no peak-allocation statistics for
  CPU tensors, tracemalloc does not see torch's allocator, and ru_maxrss never goes down within a
  process, so on CPU this is the measure we can trust.
* `peak_MB` (CUDA only): torch.cuda.max_memory_allocated during one step, above what was allocated
  before it (parameters and optimizer state).
"""

from __future__ import annotations

import math
import statistics
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from ..compendium import report
from .. import runtime
from ..compendium.measure import TABLE9_VARIANTS, _sync, roofline, size_rows, table9, timed_steps
from ..compendium.cache import cached
from ..config import EncoderConfig, RoMAEConfig, check_profile, size
from ..model import RoMAEForPrediction
from ..compendium.reference import paper_value
from ..compendium.report import device_label, record, save_table, scale

PAPER_SIZES = ("tiny-shallow", "tiny", "small", "base")  # Table 8's columns
PAPER_GPU = "NVIDIA GTX 1650 Ti"  # App. B.2: "calculated on an NVIDIA 1650Ti GPU"
PAPER_DEVICE = f"{PAPER_GPU}, the authors' code (App. B.2)"
# The authors' timing harness (branch add-perf-experiments, `performance_test`; /work/shared/paper/results.md,
# Table 9): batch 64, 10 epochs over 10,000 copies of one image, 3 trials per variant, whole training calls timed
PAPER_TIMING = dict(batch=64, images=10_000, epochs=10, trials=3)
BACKENDS = {"default": None, "math": SDPBackend.MATH}  # None: PyTorch picks (fused where it can)
DRY_LENGTH = 512  # a dry run on the CPU sweeps sequence lengths up to this


@dataclass
class ComputeConfig:
    """One profile of the compute experiment."""

    # Table 9 workload (App. B.2 via romae.compendium.measure.table9): RoMAE-small + tiny-shallow decoder, 196 tokens
    batch: int = 8  # images per step (bench default; the authors' harness used 64 on a GPU)
    rounds: int = 3  # interleaved rounds (variants alternate step by step)
    steps: int = 20  # timed steps per variant per round
    warmup: int = 3  # untimed steps per variant first
    device: str = "cpu"  # cpu | cuda | auto (cuda when available)
    # sequence-length sweep (Sec. 6): one training step of an encoder with 1-D continuous RoPE
    sweep_size: str = "tiny"  # Table 8 size of the encoder
    sweep_lengths: tuple[int, ...] = (64, 128, 256, 512, 1024, 2048, 4096)  # token counts N
    math_max_len: int = 2048  # the explicit N x N kernel only up to here (its memory grows as N^2)
    sweep_batch: int = 1  # sequences per step
    sweep_steps: int = 3  # timed steps per N (median reported)
    sweep_warmup: int = 1  # untimed steps per N first (also where activations are counted)
    # roofline (romae.compendium.measure.roofline): each workload's training step against its plain-matmul limit
    roofline_workloads: tuple[str, ...] = ("table9", "pendulum", "physionet")
    roofline_batch: int | None = None  # None: each workload's own (16)
    roofline_steps: int = 10  # timed steps (median reported)
    roofline_warmup: int = 3
    roofline_min_seconds: float = 2.0  # timed steps repeated until they add up to this


PROFILES = {
    # seconds on CPU: one round of two steps at batch 1; a 2-block encoder on short sequences.
    # Checks that everything runs; its numbers mean nothing
    "smoke": ComputeConfig(batch=1, rounds=1, steps=2, warmup=0, sweep_size="tiny-shallow",
                           sweep_lengths=(32, 64, 128, 256), math_max_len=256, sweep_steps=2,
                           roofline_workloads=("table9",), roofline_batch=1, roofline_steps=1, roofline_warmup=0,
                           roofline_min_seconds=0.0),
    # bench defaults (about 2.5 min for Table 9 on a 2-thread CPU) + the sweep (a few minutes)
    "quick": ComputeConfig(),
    # as quick, on CUDA when there is one
    "paper": ComputeConfig(device="auto"),
}


def profile_config(profile: str) -> ComputeConfig:
    """The ComputeConfig of a profile, with device 'auto' resolved to the runtime's (ROMAE_DEVICE), else cuda or
    cpu. A dry run (`romae.runtime`) times a couple of steps per setting, at the profile's shapes."""
    cfg = PROFILES[check_profile(profile)]
    if cfg.device == "auto":
        cfg = replace(cfg, device=runtime.current().device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if runtime.dry_run():  # every setting, timed for a couple of steps: numbers that mean nothing
        cfg = replace(cfg, rounds=1, steps=2, warmup=0, sweep_steps=1, sweep_warmup=1, roofline_steps=1,
                      roofline_warmup=0, roofline_min_seconds=0.0)
        if cfg.device == "cpu":  # the same models and tokens per sample, at batch 2 and sequences up to DRY_LENGTH
            cfg = replace(cfg, batch=min(cfg.batch, 2), roofline_batch=2,
                          sweep_lengths=tuple(n for n in cfg.sweep_lengths if n <= DRY_LENGTH),
                          math_max_len=min(cfg.math_max_len, DRY_LENGTH))
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' asked for, but torch sees no CUDA device")
    return cfg


# ---------------------------------------------------------------- Table 8


def table8() -> pd.DataFrame:
    """Table 8: shape and block parameters of each paper size, beside the paper's count."""
    rows = [r for r in size_rows() if r["size"] in PAPER_SIZES]
    df = pd.DataFrame(rows)[["size", "d_model", "n_heads", "depth", "d_ff", "block_params",
                             "block_params_M", "paper_M", "rel_diff"]]
    return df.rename(columns={"block_params_M": "ours_M", "rel_diff": "rel_diff_to_paper"})


# ---------------------------------------------------------------- Table 9


def device_class(device: str | torch.device) -> str:
    """The class of device a speed was measured on, for the row's scale: 'cpu', or the GPU's model; any GTX 1650
    Ti is named as the paper names it, so a run on one compares with Table 9."""
    dev = torch.device(device)
    if dev.type != "cuda":
        return dev.type
    name = torch.cuda.get_device_name(dev)
    return PAPER_GPU if "1650 ti" in name.lower().replace("1650ti", "1650 ti") else name


def paper_timed_steps() -> int:
    """Training steps the authors timed per variant: trials x epochs x ceil(images / batch) = 4,710."""
    t = PAPER_TIMING
    return t["trials"] * t["epochs"] * -(-t["images"] // t["batch"])


def table9_scale(cfg: "ComputeConfig") -> dict:
    """A Table 9 row's scale: the device class, the batch and the timed steps per variant beside the authors'.
    Another device class makes the row "not comparable (other device)" in the summary."""
    return scale(device=(device_class(cfg.device), PAPER_GPU), data=(cfg.batch, PAPER_TIMING["batch"]),
                 steps=(cfg.rounds * cfg.steps, paper_timed_steps()))


def table9_frame(result: dict) -> pd.DataFrame:
    """Table 9 from romae.compendium.measure.table9's result: steps/s, paired relative speed, the paper's value."""
    rows = [dict(positional_encoding=name, steps_per_s=result[name]["steps_per_s"],
                 relative_speed=result[name]["relative_speed"],
                 relative_speed_of_medians=result[name]["relative_speed_of_medians"],
                 paper_relative_speed=paper_value("table9_compute", name, "relative_speed"))
            for name in TABLE9_VARIANTS]
    return pd.DataFrame(rows)


def roofline_frame(results: list[dict]) -> pd.DataFrame:
    """One row per workload from romae.compendium.measure.roofline: step time, FLOPs, FLOP/s, the limit, the fraction
    and, when profiled, where the step's time goes."""
    rows = []
    for r in results:
        row = dict(workload=r["workload"], batch=r["batch"], step_ms=1e3 * r["step_seconds"],
                   step_gflop=r["step_gflop"], achieved_gflops=r["achieved_gflops"],
                   matmul_limit_gflops=r["matmul_limit_gflops"], ideal_step_ms=1e3 * r["ideal_step_seconds"],
                   fraction=r["fraction"])
        for part, sec in r.get("breakdown", {}).get("seconds_per_step", {}).items():
            row[f"{part}_ms"] = 1e3 * sec
        rows.append(row)
    return pd.DataFrame(rows)


def title_tag(profile: str) -> str:
    """'(quick profile, reduced)' for a figure title; '(paper profile)' at the paper's settings."""
    return f"({report.title_tag(profile)})"


def plot_roofline(rf: pd.DataFrame, device: str, profile: str):
    """Per workload: the measured step split into its parts, beside the ideal (all at the matmul limit)."""
    import matplotlib.pyplot as plt
    parts = [c for c in ("matmul_ms", "attention_ms", "optimizer_ms", "other_ms") if c in rf]
    fig, axes = plt.subplots(1, len(rf), figsize=(3.2 * len(rf), 3.4), squeeze=False)
    for ax, r in zip(axes[0], rf.itertuples()):
        bottom = 0.0
        for i, c in enumerate(parts):
            v = getattr(r, c)
            ax.bar(0, v, 0.6, bottom=bottom, color=f"C{i}", label=c.removesuffix("_ms"))
            bottom += v
        if not parts:
            ax.bar(0, r.step_ms, 0.6, color="C0", label="measured step")
        else:  # the parts come from profiled steps, a little slower than the timed ones
            ax.hlines(r.step_ms, -0.35, 0.35, color="k", lw=2, label="step time (not profiled)")
        ax.bar(1, r.ideal_step_ms, 0.6, color="0.6", label="its FLOPs at the matmul limit")
        ax.set_xticks([0, 1], ["measured", "limit"])
        ax.set_title(f"{r.workload} (batch {r.batch}): {r.fraction:.2f} of the limit", fontsize=9)
        ax.set_ylabel("ms per training step")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=7, frameon=False)
    fig.suptitle(f"Roofline of a training step on {device} {title_tag(profile)}", fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


# ---------------------------------------------------------------- sequence length (Sec. 6)


def saved_activation_bytes(step, exclude: set[int]) -> int:
    """Run step() and return the bytes autograd saved for backward, one count per storage.

    exclude: data pointers of storages not to count (the parameters)."""
    seen: dict[int, int] = {}

    def pack(t):
        s = t.untyped_storage()
        if s.data_ptr() not in exclude:
            seen[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        step()
    return sum(seen.values())


def length_sweep(lengths, encoder: str | EncoderConfig = "tiny", batch: int = 1, steps: int = 3,
                 warmup: int = 1, device: str = "cpu", backend: str = "default", token_dim: int = 16,
                 seed: int = 0) -> list[dict]:
    """Time one training step (forward + backward + AdamW) of a RoMAE encoder for each token count N.

    Continuous 1-D RoPE at fresh random real positions each step, no [CLS], mean head, MSE loss.
    backend: 'default' (PyTorch's choice: a fused kernel, O(N) memory) or 'math' (explicit N x N
    attention). Returns one dict per N: n_tokens, seconds_per_step (median), activation_MB,
    peak_MB (CUDA only, else None), attention_matrix_MB (B * H * N^2 * 4 bytes * depth: what standard
    attention stores for backward, for reference).
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    dev = torch.device(device)
    enc = size(encoder) if isinstance(encoder, str) else encoder
    torch.manual_seed(seed)
    cfg = RoMAEConfig(token_dim=token_dim, n_axes=1, encoder=enc, pos_encoding="rope", use_cls=False,
                      head="mean", task="regression", n_outputs=1)
    model = RoMAEForPrediction(cfg).to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    labels = torch.randn(batch, 1, device=dev)
    rows = []
    for n in lengths:
        values = torch.randn(batch, n, token_dim, device=dev)
        grid = torch.arange(n, dtype=torch.float32, device=dev).expand(batch, 1, n)

        def step():
            positions = grid + torch.rand_like(grid) - 0.5  # real-valued: nothing cached between steps
            opt.zero_grad(set_to_none=True)
            _, loss = model(values, positions, labels)
            loss.backward()
            opt.step()

        kernel = BACKENDS[backend]
        with sdpa_kernel(kernel) if kernel is not None else nullcontext():
            activation = saved_activation_bytes(step, params)  # first warm-up step, counted
            for _ in range(max(warmup - 1, 0)):
                step()
            peak = None
            if dev.type == "cuda":
                _sync(dev)
                torch.cuda.reset_peak_memory_stats(dev)
                before = torch.cuda.memory_allocated(dev)
                step()
                _sync(dev)
                peak = (torch.cuda.max_memory_allocated(dev) - before) / 2**20
            times = timed_steps(step, dev, steps)
        rows.append(dict(n_tokens=n, backend=backend, seconds_per_step=statistics.median(times),
                         seconds_min=min(times),
                         activation_MB=activation / 2**20, peak_MB=peak,
                         attention_matrix_MB=batch * enc.n_heads * n * n * 4 * enc.depth / 2**20))
    return rows


def loglog_slope(n, y, last: int = 3) -> float:
    """Slope of log y against log n over the `last` largest n (the growth exponent where N dominates)."""
    n, y = np.asarray(n, float), np.asarray(y, float)
    order = np.argsort(n)[-last:]
    if len(order) < 2:
        return math.nan
    return float(np.polyfit(np.log(n[order]), np.log(y[order]), 1)[0])


def sweep_slopes(sweep: pd.DataFrame, last: int = 3) -> pd.DataFrame:
    """Growth exponents of time and activation memory per backend (slope 1 = linear, 2 = quadratic)."""
    rows = []
    for backend, g in sweep.groupby("backend", sort=False):
        rows.append(dict(backend=backend, n_range=f"{g.n_tokens.nlargest(last).min()}-{g.n_tokens.max()}",
                         time_slope=loglog_slope(g.n_tokens, g.seconds_per_step, last),
                         activation_slope=loglog_slope(g.n_tokens, g.activation_MB, last)))
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- figures


def gpu_table9(path: Path | None = None) -> dict | None:
    """The relative speeds `make gpu-check` measured on a GPU (<repo>/reports/gpu/table9_cuda.json, committed with
    the device named): {"device", "torch", "batch", "speeds": {encoding: relative speed}}, or None without one."""
    import json

    path = path or report.ROOT / "reports" / "gpu" / "table9_cuda.json"
    try:
        data = json.loads(Path(path).read_text())
        settings = data["settings"]
        speeds = {k: float(v["relative_speed"]) for k, v in data.items() if k != "settings"}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return dict(device=str(settings.get("device", "a GPU")), torch=str(settings.get("torch", "?")),
                batch=settings.get("batch"), speeds=speeds)


def plot_table9(t9: pd.DataFrame, device: str, profile: str, row_scale: dict, gpu: dict | None = None):
    """Ratios only: our speed of each encoding relative to absolute sin/cos (bars: this run's device, and beside it
    the GPU measurement of `make gpu-check` when one is committed, `gpu_table9`), the paper's ratios marked (black
    lines). No absolute times: a CPU step at batch 8 and a GTX 1650 Ti at batch 64 share no scale.
    row_scale: the rows' scale (`table9_scale`): on another device class the title says "NOT comparable"."""
    import matplotlib.pyplot as plt
    comparable = row_scale["device"][0] == row_scale["device"][1]
    fig, ax = plt.subplots(figsize=(6.6, 4.2), layout="constrained")
    x = np.arange(len(t9))
    on_gpu = [gpu["speeds"].get(e) for e in t9.positional_encoding] if gpu else []
    width = 0.36 if gpu else 0.55
    left = x - width / 2 if gpu else x
    ax.bar(left, t9.relative_speed, width, color="C0", label=f"ours ({device}, batch {row_scale['data'][0]})")
    for xi, ours in zip(left, t9.relative_speed):
        ax.text(xi, 0.45, f"{ours:.3f}", ha="center", va="center", fontsize=8, color="w", rotation=90)
    if gpu:
        ax.bar(x + width / 2, [np.nan if v is None else v for v in on_gpu], width, color="C2",
               label=f"ours ({gpu['device']}, torch {gpu['torch']}, batch {gpu['batch']}; make gpu-check)")
        for xi, v in zip(x + width / 2, on_gpu):
            if v is not None:
                ax.text(xi, 0.45, f"{v:.3f}", ha="center", va="center", fontsize=8, color="w", rotation=90)
    ax.hlines(t9.paper_relative_speed, x - 0.45, x + 0.45, colors="k", lw=2.5,
              label=f"paper ({PAPER_GPU}, batch {PAPER_TIMING['batch']}, the authors' code)")
    for xi, paper in zip(x, t9.paper_relative_speed):
        ax.text(xi + 0.47, paper, f"paper {paper:.2f}", ha="left", va="center", fontsize=7)
    ax.set_xticks(x, t9.positional_encoding)
    ax.set_xlim(-0.6, len(t9) - 0.5 + 0.55)
    top = max([1.1, 1.05 * float(np.nanmax(t9.relative_speed))] + [1.05 * v for v in on_gpu if v is not None])
    ax.set_ylim(0, top)  # a noisy smoke ratio may exceed 1
    ax.set_ylabel("training steps/s relative to absolute (= 1)")
    state = "comparable with the paper" if comparable else f"NOT comparable: other device ({PAPER_GPU} in the paper)"
    ax.set_title(f"Table 9: relative speed {title_tag(profile)}\n{state}", fontsize=9)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=1, frameon=False)
    return fig


def plot_sequence_cost(sweep: pd.DataFrame, profile: str):
    """Log-log step time and activation memory against N per backend, with slope-1 and slope-2 guides; legends
    below the panels (off the data), one short label per axis."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6), layout="constrained")
    for ax, col, label in ((axes[0], "seconds_per_step", "seconds per training step"),
                           (axes[1], "activation_MB", "activation memory for backward (MiB)")):
        for i, (backend, g) in enumerate(sweep.groupby("backend", sort=False)):
            ax.loglog(g.n_tokens, g[col], "o-", color=f"C{i}", label=f"{backend} attention")
        if col == "activation_MB":
            g = sweep[sweep.backend == sweep.backend.iloc[0]]
            ax.loglog(g.n_tokens, g.attention_matrix_MB, ":", color="0.4",
                      label="N x N attention matrices (B H N² 4 B x depth)")
        n = np.array([sweep.n_tokens.min(), sweep.n_tokens.max()], float)
        y0 = sweep[col].min()
        for slope, style in ((1, "--"), (2, "-.")):
            ax.loglog(n, y0 * (n / n[0]) ** slope, style, color="k", lw=0.8, alpha=0.6,
                      label=f"slope {slope} guide")
        ax.set_xlabel("tokens N")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.2)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    fig.suptitle(f"Sec. 6: cost of one training step against sequence length {title_tag(profile)}\n"
                 "RoMAE encoder, 1-D continuous RoPE (ours; the paper states the limitation without measuring it)",
                 fontsize=10)
    return fig


# ---------------------------------------------------------------- run


def _dry_label(frame: pd.DataFrame) -> pd.DataFrame:
    """A dry run's timings (a couple of steps each) carry its note in a column; other runs' frames unchanged."""
    dry = runtime.dry_run()
    return frame.assign(note="DRY RUN: a couple of timed steps per setting, not a result") if dry else frame


def run(profile: str = "smoke", reports_dir=None, cache_dir=None, refresh: bool = False,
        progress: bool = False) -> dict:
    """Table 8, Table 9 and the length sweep for a profile; records rows (returned as `rows`) and saves the tables.

    Timings are cached by (profile config, device name, torch version): re-running a notebook to
    restyle a figure does not re-time; pass refresh=True to time again.
    """
    cfg = profile_config(profile)
    device = device_label(cfg.device)
    key = dict(config=cfg, device=device, torch=torch.__version__)

    t8 = table8()
    rows = []
    for r in t8.itertuples():  # a count, not a run: no scale
        rows.append(record("table8_model_sizes", r.size, "block_params_M", r.ours_M, profile=profile, scale={},
                           device="exact count", note=f"{r.block_params} parameters in {r.depth} blocks",
                           reports_dir=reports_dir))
    save_table(t8, "table8_model_sizes", reports_dir)

    res9 = cached("table9_compute", key, lambda: table9(cfg.batch, cfg.rounds, cfg.steps, cfg.warmup,
                                                         cfg.device, progress=progress),
                  cache_dir=cache_dir, refresh=refresh)
    t9 = _dry_label(table9_frame(res9))
    t9_scale = table9_scale(cfg)
    for r in t9.itertuples():
        rows.append(record(
            "table9_compute", r.positional_encoding, "relative_speed", r.relative_speed, profile=profile,
            scale=t9_scale, device=device, n_seeds=1, reports_dir=reports_dir,
            note=f"paired median of {cfg.rounds}x{cfg.steps} single steps, batch {cfg.batch}; paper: {PAPER_DEVICE}, "
                 f"batch {PAPER_TIMING['batch']}, wall time of whole training calls"))
    save_table(t9, "table9_compute", reports_dir)

    rf_raw = cached("roofline", key, lambda: [
        roofline(w, cfg.roofline_batch, cfg.roofline_steps, cfg.roofline_warmup, cfg.device, breakdown=True,
                 min_seconds=cfg.roofline_min_seconds, product_repeats=1 if runtime.dry_run() else 7)
        for w in cfg.roofline_workloads], cache_dir=cache_dir, refresh=refresh)
    rf = _dry_label(roofline_frame(rf_raw))
    save_table(rf, "table_roofline", reports_dir)

    def sweep_all():
        rows = []
        for backend in BACKENDS:
            lengths = [n for n in cfg.sweep_lengths if backend != "math" or n <= cfg.math_max_len]
            rows += length_sweep(lengths, cfg.sweep_size, cfg.sweep_batch, cfg.sweep_steps,
                                 cfg.sweep_warmup, cfg.device, backend)
        return rows

    sweep = _dry_label(pd.DataFrame(cached("sequence_length_cost", key, sweep_all, cache_dir=cache_dir,
                                           refresh=refresh)))
    save_table(sweep, "table_sequence_length_cost", reports_dir)
    return dict(config=cfg, device=device, table8=t8, table9=t9, table9_raw=res9, table9_scale=t9_scale,
                roofline=rf, sweep=sweep, slopes=sweep_slopes(sweep), rows=rows)
