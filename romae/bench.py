"""Benchmarks: model sizes (Table 8) and the relative speed of positional encodings (Table 9).

    python -m romae.bench sizes [--json]
    python -m romae.bench table9 [--batch 8] [--rounds 3] [--steps 5] [--device cpu|cuda] [--json]

Speed is measured here, never asserted in tests. Table 9 reproduces the workload of App. B.2:
RoMAE-small encoder, tiny-shallow decoder, 224x224 RGB images cut into 16x16 patches (196 tokens of
768 values), 75 % of tokens hidden, 2-D positions, no [CLS], one AdamW step at a time, for

* absolute:   the authors' 1-D sin/cos table over the token index, added at the input;
* quantized:  RoPE at the integer grid positions;
* continuous: RoPE at fresh random real-valued positions every step (grid + uniform jitter).

Variants alternate step by step (the order rotates each round) and every step is timed on its own.
Relative speed (as the paper's table: absolute = 1, higher = faster) is the median, over all cycles,
of t_absolute / t_variant for the steps taken side by side, so slow drifts of the machine cancel and
stray hiccups do not count; steps/s is 1 / median step time. The ratio of the medians is reported
too (`relative_speed_of_medians`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from .config import SIZES, RoMAEConfig, size
from .model import Encoder, RoMAEForPreTraining
from .patching import grid_positions
from .reference import paper_value
from .report import device_label

TABLE9_VARIANTS = {"absolute": "absolute", "quantized": "rope_quantized", "continuous": "rope"}


def size_rows() -> list[dict]:
    """Table 8: each size's shape and its block parameter count, counted on an instantiated stack."""
    rows = []
    for name, shape in SIZES.items():
        cfg = size(name)
        n_params = sum(p.numel() for p in Encoder(cfg, n_axes=1).blocks.parameters())
        assert n_params == cfg.block_params()  # the closed form in config.py agrees with the module
        try:
            paper = paper_value("table8_model_sizes", name, "block_params_M")
        except KeyError:
            paper = None  # custom sizes (pendulum) are not in Table 8
        rows.append(dict(size=name, **shape, block_params=n_params, block_params_M=n_params / 1e6,
                         paper_M=paper,
                         rel_diff=None if paper is None else n_params / 1e6 / paper - 1.0))
    return rows


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def table9(batch: int = 8, rounds: int = 3, steps: int = 20, warmup: int = 3, device: str = "cpu",
           seed: int = 0, progress: bool = True) -> dict:
    """Median training steps per second of the three positional encodings, and speeds relative to absolute."""
    dev = torch.device(device)
    torch.manual_seed(seed)
    grid = (14, 14)  # 224 / 16
    n_tokens, token_dim = grid[0] * grid[1], 16 * 16 * 3
    values = torch.randn(batch, n_tokens, token_dim, device=dev)
    grid_pos = grid_positions(grid, device=dev).expand(batch, -1, -1).contiguous()  # [B, 2, 196]

    models, opts = {}, {}
    for name, pe in TABLE9_VARIANTS.items():
        torch.manual_seed(seed)  # same weights for every variant
        cfg = RoMAEConfig(token_dim=token_dim, n_axes=2, encoder=size("small"),
                          decoder=size("tiny-shallow"), pos_encoding=pe, use_cls=False, mask_ratio=0.75,
                          normalize_targets=True)
        models[name] = RoMAEForPreTraining(cfg).to(dev).train()
        opts[name] = torch.optim.AdamW(models[name].parameters(), lr=1e-4, fused=True)

    def step(name: str) -> None:
        pos = grid_pos
        if name == "continuous":  # fresh real-valued positions: nothing can be cached between steps
            pos = grid_pos + torch.rand_like(grid_pos) - 0.5
        opts[name].zero_grad(set_to_none=True)
        _, loss = models[name](values, pos)  # a fresh random 75 % mask inside, as in training
        loss.backward()
        opts[name].step()

    for name in models:  # warm-up: allocator, kernels, autograd graphs
        for _ in range(warmup):
            step(name)
    step_times: dict[str, list[float]] = {name: [] for name in models}
    names = list(models)
    for r in range(rounds):
        order = names[r % 3:] + names[: r % 3]
        for _ in range(steps):  # variants alternate step by step, each step timed alone
            for name in order:
                _sync(dev)
                t0 = time.perf_counter()
                step(name)
                _sync(dev)
                step_times[name].append(time.perf_counter() - t0)
        if progress:
            done = ", ".join(f"{n} {1 / statistics.median(step_times[n][-steps:]):.2f}" for n in names)
            print(f"round {r + 1}/{rounds}: steps/s {done}", file=sys.stderr)

    out = {}
    for name, t in step_times.items():
        # paired: each absolute step against the same variant's step next to it in time
        ratios = [a / b for a, b in zip(step_times["absolute"], t)]
        out[name] = {"steps_per_s": 1.0 / statistics.median(t),
                     "relative_speed": statistics.median(ratios),
                     "relative_speed_of_medians": statistics.median(step_times["absolute"]) / statistics.median(t),
                     "paper_relative_speed": paper_value("table9_compute", name, "relative_speed"),
                     "step_seconds": t}
    out["settings"] = dict(batch=batch, rounds=rounds, steps_per_round=steps, warmup=warmup,
                           device=device_label(dev), torch=torch.__version__,
                           threads=torch.get_num_threads(), tokens=n_tokens, mask_ratio=0.75)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m romae.bench", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sizes", help="Table 8: model sizes and block parameter counts")
    s.add_argument("--json", action="store_true", help="print JSON instead of a table")
    s.add_argument("--out", help="also write the JSON result to this file")
    t = sub.add_parser("table9", help="Table 9: relative speed of positional encodings")
    t.add_argument("--batch", type=int, default=8, help="images per step (default 8)")
    t.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    t.add_argument("--steps", type=int, default=20, help="timed steps per variant per round (default 20)")
    t.add_argument("--warmup", type=int, default=3, help="untimed steps per variant first (default 3)")
    t.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    t.add_argument("--json", action="store_true", help="print JSON instead of a table")
    t.add_argument("--out", help="also write the JSON result to this file")
    args = ap.parse_args(argv)

    def save(result) -> None:
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(result, indent=2) + "\n")

    if args.cmd == "sizes":
        rows = size_rows()
        save(rows)
        if args.json:
            print(json.dumps(rows, indent=2))
            return 0
        print(f"{'size':<13}{'d_model':>8}{'heads':>6}{'depth':>6}{'d_ff':>6}{'block params':>14}"
              f"{'paper':>9}{'diff':>8}")
        for r in rows:
            paper = "-" if r["paper_M"] is None else f"{r['paper_M']:g}M"
            diff = "-" if r["rel_diff"] is None else f"{100 * r['rel_diff']:+.2f}%"
            print(f"{r['size']:<13}{r['d_model']:>8}{r['n_heads']:>6}{r['depth']:>6}{r['d_ff']:>6}"
                  f"{r['block_params_M']:>13.4f}M{paper:>9}{diff:>8}")
        return 0

    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda asked for, but torch sees no CUDA device")
    if min(args.batch, args.rounds, args.steps) < 1 or args.warmup < 0:
        ap.error("--batch, --rounds and --steps must be >= 1 and --warmup >= 0")
    res = table9(args.batch, args.rounds, args.steps, args.warmup, args.device)
    save(res)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    st = res["settings"]
    print(f"Table 9 workload on {st['device']}, torch {st['torch']}, batch {st['batch']}: "
          f"{st['rounds']} rounds x {st['steps_per_round']} steps per variant, interleaved")
    print(f"{'positional encoding':<22}{'steps/s':>9}{'relative':>10}{'(of medians)':>14}{'paper':>8}")
    for name in TABLE9_VARIANTS:
        r = res[name]
        print(f"{name:<22}{r['steps_per_s']:>9.3f}{r['relative_speed']:>10.3f}"
              f"{r['relative_speed_of_medians']:>14.3f}{r['paper_relative_speed']:>8.2f}")
    print("paper: NVIDIA GTX 1650 Ti, the authors' code (App. B.2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
