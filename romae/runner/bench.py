"""Benchmarks: model sizes (Table 8), the relative speed of positional encodings (Table 9), the
roofline of a training step and the host's batches from a token store (`feed`).

    python -m romae.runner.bench sizes [--json]
    python -m romae.runner.bench table9 [--batch 8] [--rounds 3] [--steps 5] [--device cpu|cuda] [--json]
    python -m romae.runner.bench roofline [--workload table9|pendulum|physionet|all] [--device cpu|cuda]
                                   [--dtype float32|bfloat16] [--compile] [--breakdown] [--json]
    python -m romae.runner.bench plan --profile paper [--device h100|a100|cpu|this] [--gpus N] [--gpu-memory GB]
                               [--precision fp32|tf32|bf16|all] [--only 12,13] [--out plan.json] [--markdown]
                               [--readme docs/reproducing.md]     (see romae.compendium.plan)
    python -m romae.runner.bench feed [--objects 20000] [--batch 4096,16384] [--epochs 3] [--json]

The measurements (model sizes, Table 9's timings, the roofline, the light curves `feed` reads) are
`romae.compendium.measure`'s, where notebook 03 (`romae.experiments.compute`) and the plan call them too;
this module is their command line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from ..config import SIZES
from ..model import RoMAEForPreTraining
from ..patching import grid_positions
from ..compendium.report import device_label
# the measurements, importable from here as before
from ..compendium.measure import (TABLE9_VARIANTS, WORKLOADS, _CPU_ATTENTION_FLOPS, _ProductLog,  # noqa: F401
                                  _interleaved, _paired, _sync, feed_table, roofline, size_rows, table9,
                                  table9_config, timed_steps, write_feed_shard)


def feed(objects: int = 20000, batches: tuple[int, ...] = (4096, 16384), epochs: int = 3, shards: int = 2,
         seed: int = 0, progress: bool = True) -> dict:
    """Seconds per `romae.store.TokenStore.batch` (the host's share of a training step on a store) on
    `objects` random ELAsTiCC-shaped light curves (`feed_table`) in `shards` shards, as the ELAsTiCC
    recipe views them: thinned to 65 points per band, with and without ATAT's alert mask. Each batch size
    runs `epochs` epochs of whole random batches on a fresh view: the first epoch apart (what a view
    computes once, e.g. a cached `keep`), the median of the later ones; wall and CPU seconds (this process's:
    on a machine shared with other work, the steadier of the two)."""
    import statistics
    import tempfile

    import numpy as np

    from .. import store
    from ..data.elasticc import MAX_PER_BAND, alert_mask

    views = {"thinned": dict(max_per_variable=MAX_PER_BAND),
             "thinned+alert": dict(max_per_variable=MAX_PER_BAND, keep=alert_mask)}
    rows = []
    with tempfile.TemporaryDirectory(prefix="romae-feed-") as tmp:
        obs = feed_table(objects, seed)
        cut = np.searchsorted(obs.object_id.to_numpy(), np.linspace(0, objects, shards + 1)[1:-1].astype(int))
        for i, part in enumerate(np.split(np.arange(len(obs)), cut)):
            write_feed_shard(tmp, f"part-{i}", obs.iloc[part])
        rng = np.random.default_rng(seed)
        for name, opts in views.items():
            for b in batches:
                data = store.TokenStore(tmp, **opts)
                wall, cpu = [], []  # per epoch: (wall, CPU) seconds of each batch
                for _ in range(epochs):
                    perm = torch.as_tensor(rng.permutation(len(data)))
                    wall.append([])
                    cpu.append([])
                    for j in range(max(1, len(data) // b)):
                        t0, c0 = time.perf_counter(), time.process_time()
                        data.batch(perm[j * b:(j + 1) * b])
                        wall[-1].append(time.perf_counter() - t0)
                        cpu[-1].append(time.process_time() - c0)
                later = slice(1 if epochs > 1 else 0, None)
                row = dict(view=name, batch=min(b, len(data)), batches_per_epoch=len(wall[0]),
                           first_epoch_seconds=statistics.median(wall[0]),
                           first_epoch_cpu_seconds=statistics.median(cpu[0]),
                           seconds=statistics.median([t for e in wall[later] for t in e]),
                           cpu_seconds=statistics.median([t for e in cpu[later] for t in e]))
                rows.append(row)
                if progress:
                    print(f"{name} batch {row['batch']}: {row['seconds']:.3f} s ({row['cpu_seconds']:.3f} s CPU)",
                          file=sys.stderr)
    return dict(rows=rows, settings=dict(objects=objects, observations=len(obs), shards=shards, epochs=epochs,
                                         seed=seed, device=device_label("cpu"), threads=torch.get_num_threads()))


# ----------------------------------------------------------------------------- the authors' step

def _load_authors(repo: Path):
    """The authors' library (a checkout of github.com/Chromeilion/RoMAE) as `authors_romae`: its package
    is also named `romae`, so its three modules are read and their `romae.` imports renamed."""
    import types

    src_dir = Path(repo) / "romae"
    if not (src_dir / "model.py").is_file():
        raise FileNotFoundError(f"{src_dir / 'model.py'} not found: --repo must be a checkout of "
                                "https://github.com/Chromeilion/RoMAE")
    pkg = types.ModuleType("authors_romae")
    pkg.__path__ = []
    sys.modules["authors_romae"] = pkg
    for name in ("utils", "positional_embeddings", "model"):
        path = src_dir / f"{name}.py"
        mod = types.ModuleType(f"authors_romae.{name}")
        mod.__file__ = str(path)
        sys.modules[mod.__name__] = mod
        code = path.read_text().replace("from romae.", "from authors_romae.").replace("import romae.", "import authors_romae.")
        try:
            exec(compile(code, str(path), "exec"), mod.__dict__)
        except ModuleNotFoundError as e:
            raise ModuleNotFoundError(f"the authors' code needs {e.name!r}: pip install pydantic-settings einops "
                                      "(or pass --deps, a folder they are installed in)") from e
    return sys.modules["authors_romae.model"]


def authors(repo: str | Path, batch: int = 16, rounds: int = 3, steps: int = 10, warmup: int = 3,
            seed: int = 0, progress: bool = True, compile: bool = False) -> dict:
    """Our Table 9 step (continuous RoPE) against the authors' model on the same images, masks and
    positions, alternating step by step: their step as their trainer takes it (torch.optim.AdamW with
    its defaults) and with the fused AdamW we use, to separate the model from the optimiser.
    `compile`: also our model through romae.train.compile_model ("ours_compiled")."""
    from ..masking import random_mask
    from ..patching import patchify

    A = _load_authors(Path(repo))
    torch.manual_seed(seed)
    images = torch.randn(batch, 3, 224, 224)
    grid = grid_positions((14, 14)).expand(batch, -1, -1)
    ours = RoMAEForPreTraining(table9_config()).train()

    def theirs_model():
        torch.manual_seed(seed)
        small = {k: v for k, v in SIZES["small"].items() if k != "d_ff"}
        cfg = A.RoMAEForPreTrainingConfig(
            encoder_config=A.EncoderConfig(d_model=small["d_model"], nhead=small["n_heads"], depth=small["depth"]),
            use_cls=False, pos_encoding="ropend", tubelet_size=(1, 16, 16), n_channels=3, n_pos_dims=2,
            normalize_targets=True)
        return A.RoMAEForPreTraining(cfg).train()

    models = {"ours": ours, "authors": theirs_model(), "authors_fused_adamw": theirs_model()}
    if compile:
        from ..train import compile_model

        torch.manual_seed(seed)
        twin = RoMAEForPreTraining(ours.cfg).train()
        models["ours_compiled"] = compile_model(twin)
    opts = {"ours": torch.optim.AdamW(ours.parameters(), lr=1e-4, fused=True),
            "authors": torch.optim.AdamW(models["authors"].parameters(), lr=1e-4),  # their trainer's call
            "authors_fused_adamw": torch.optim.AdamW(models["authors_fused_adamw"].parameters(), lr=1e-4,
                                                     fused=True)}
    if compile:
        opts["ours_compiled"] = torch.optim.AdamW(models["ours_compiled"].parameters(), lr=1e-4, fused=True)

    def step(name: str) -> None:
        pos = grid + torch.rand_like(grid) - 0.5  # fresh real-valued positions
        opts[name].zero_grad(set_to_none=True)
        if name.startswith("ours"):  # channels-last patches, as romae.from_images gives them
            values = patchify(images.permute(0, 2, 3, 1), (16, 16))
            _, loss = models[name](values, pos)
        else:  # their input: [B, T, C, H, W] and a mask they are given
            mask = random_mask(batch, 196, 0.75)
            _, loss = models[name](images[:, None], mask, pos)
        loss.backward()
        opts[name].step()

    compile_seconds = None
    for name in models:
        if name == "ours_compiled":  # its first step compiles
            compile_seconds = timed_steps(lambda: step(name), torch.device("cpu"), 1)[0]
        for _ in range(warmup):
            step(name)
    times = _interleaved(step, list(models), rounds, steps, torch.device("cpu"), progress,
                         lambda t: f"{1e3 * t:.0f} ms")
    out = {n: {"step_seconds": statistics.median(t), "speedup_of_ours": _paired(t, times["ours"]),
               "speedup_over_authors": _paired(times["authors"], t)} for n, t in times.items()}
    out["settings"] = dict(batch=batch, rounds=rounds, steps_per_round=steps, warmup=warmup,
                           device=device_label("cpu"), torch=torch.__version__, threads=torch.get_num_threads(),
                           # which checkout, never where it lay on the machine that measured (published file)
                           authors_repo=Path(repo).name, compile_seconds=compile_seconds)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m romae.runner.bench", description=__doc__.split("\n\n")[0])
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
    r = sub.add_parser("roofline", help="a training step's FLOP/s against the plain-matmul limit of its shapes")
    r.add_argument("--workload", default="table9", choices=[*WORKLOADS, "all"],
                   help="table9 (default, App. B.2), pendulum (notebook 14), physionet (notebook 16), or all")
    r.add_argument("--batch", type=int, help="samples per step (default: the workload's, 16)")
    r.add_argument("--steps", type=int, default=10, help="timed steps (default 10)")
    r.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    r.add_argument("--min-seconds", type=float, default=2.0,
                   help="repeat the timed steps until they add up to this (default 2.0)")
    r.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    r.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"],
                   help="float32, or bfloat16 autocast (default float32)")
    r.add_argument("--compile", action="store_true", help="time the torch.compile'd model (romae.train.compile_model)")
    r.add_argument("--breakdown", action="store_true", help="also profile where the step's time goes")
    r.add_argument("--json", action="store_true", help="print JSON instead of a table")
    r.add_argument("--out", help="also write the JSON result to this file")
    a = sub.add_parser("authors", help="our Table 9 step against the authors' model (needs their code)")
    a.add_argument("--repo", required=True, help="a checkout of https://github.com/Chromeilion/RoMAE")
    a.add_argument("--deps", help="a folder holding pydantic-settings and einops (pip install --target)")
    a.add_argument("--batch", type=int, default=16, help="images per step (default 16)")
    a.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    a.add_argument("--steps", type=int, default=10, help="timed steps per model per round (default 10)")
    a.add_argument("--compile", action="store_true", help="also time our model through torch.compile")
    a.add_argument("--json", action="store_true", help="print JSON instead of a table")
    a.add_argument("--out", help="also write the JSON result to this file")
    pl = sub.add_parser("plan", help="steps, FLOPs, memory, micro-batch and time of every paper training (romae.compendium.plan)")
    pl.add_argument("--profile", default="paper", choices=["paper"], help="the profile planned (paper)")
    pl.add_argument("--device", default="h100", choices=["h100", "a100", "cpu", "this"],
                    help="h100 / a100: estimated from peak FLOP/s; cpu: the reference CPU; this: measured here")
    pl.add_argument("--gpus", type=int, default=1, help="devices (notebooks 10, 11, 13 split their batch over them)")
    pl.add_argument("--gpu-memory", type=float, help="GiB per device the micro-batches must fit (default: whole batches)")
    pl.add_argument("--precision", default="all", choices=["fp32", "tf32", "bf16", "all"], help="default all")
    pl.add_argument("--only", help="notebooks, e.g. 12,13 (default: all that train)")
    pl.add_argument("--no-check", action="store_true", help="skip the measured check of the memory extrapolation")
    pl.add_argument("--markdown", action="store_true", help="a markdown table")
    pl.add_argument("--readme", help="write the markdown table into this Markdown file (docs/reproducing.md) between its plan markers")
    pl.add_argument("--out", help="also write the plan as JSON to this file")
    f = sub.add_parser("feed", help="seconds per TokenStore.batch on generated ELAsTiCC-shaped light curves")
    f.add_argument("--objects", type=int, default=20000, help="light curves in the store (default 20000)")
    f.add_argument("--batch", default="4096,16384", help="batch sizes, comma-separated (default 4096,16384)")
    f.add_argument("--epochs", type=int, default=3, help="epochs per batch size (default 3; the first apart)")
    f.add_argument("--json", action="store_true", help="print JSON instead of a table")
    f.add_argument("--out", help="also write the JSON result to this file")
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

    if args.cmd == "plan":
        from ..compendium import plan
        from . import experiments, plantables

        precisions = plan.PRECISIONS if args.precision == "all" else (args.precision,)
        try:
            experiments.load()
            p = plan.plan(args.device, args.gpus, args.gpu_memory, precisions,
                          only=[n.strip() for n in args.only.split(",")] if args.only else None, checked=not args.no_check)
        except ValueError as e:
            ap.error(str(e))
        save(p)
        if args.readme:
            plantables.write_readme(args.readme, p)
        print(plan.describe(p))
        print(plan.table(p, markdown=args.markdown))
        return 0

    if args.cmd == "feed":
        batches = tuple(int(b) for b in args.batch.split(","))
        if min(args.objects, args.epochs, *batches) < 1:
            ap.error("--objects, --batch and --epochs must be >= 1")
        res = feed(args.objects, batches, args.epochs)
        save(res)
        if args.json:
            print(json.dumps(res, indent=2))
            return 0
        st = res["settings"]
        print(f"TokenStore.batch on {st['objects']} generated light curves ({st['observations']} observations, "
              f"{st['shards']} shards) on {st['device']}")
        print(f"{'view':<15}{'batch':>7}{'s/batch':>9}{'CPU s':>8}{'first epoch: s':>16}{'CPU s':>8}{'curves/s':>10}")
        for r in res["rows"]:
            print(f"{r['view']:<15}{r['batch']:>7}{r['seconds']:>9.3f}{r['cpu_seconds']:>8.3f}"
                  f"{r['first_epoch_seconds']:>16.3f}{r['first_epoch_cpu_seconds']:>8.3f}"
                  f"{r['batch'] / r['seconds']:>10.0f}")
        print("first epoch: a fresh view's first pass (a `keep` such as the alert mask runs once per light curve)")
        return 0
    if args.cmd == "authors":
        if args.deps:
            sys.path.append(args.deps)  # last: never shadows what this environment has
        res = authors(args.repo, args.batch, args.rounds, args.steps, compile=args.compile)
        save(res)
        if args.json:
            print(json.dumps(res, indent=2))
            return 0
        print(f"Table 9 step (batch {args.batch}, continuous RoPE) on {res['settings']['device']}")
        print(f"{'':<22}{'step ms':>9}{'speed-up over the authors (paired median)':>44}")
        for name in (n for n in res if n != "settings"):
            print(f"{name:<22}{1e3 * res[name]['step_seconds']:>9.1f}{res[name]['speedup_over_authors']:>44.2f}")
        if res["settings"]["compile_seconds"] is not None:
            print(f"ours_compiled: the first step compiled in {res['settings']['compile_seconds']:.1f} s")
        return 0
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda asked for, but torch sees no CUDA device")
    if args.cmd == "roofline":
        if (args.batch is not None and args.batch < 1) or args.steps < 1 or args.warmup < 0:
            ap.error("--batch and --steps must be >= 1 and --warmup >= 0")
        names = list(WORKLOADS) if args.workload == "all" else [args.workload]
        res = [roofline(n, args.batch, args.steps, args.warmup, args.device, args.dtype, args.compile,
                        args.breakdown, min_seconds=args.min_seconds) for n in names]
        save(res if len(res) > 1 else res[0])
        if args.json:
            print(json.dumps(res if len(res) > 1 else res[0], indent=2))
            return 0
        print(f"roofline on {res[0]['device']}, torch {res[0]['torch']}, {args.dtype}"
              f"{', compiled' if args.compile else ''}")
        print(f"{'workload':<11}{'batch':>6}{'step ms':>9}{'GFLOP':>8}{'GFLOP/s':>9}{'limit':>8}{'fraction':>10}")
        for x in res:
            print(f"{x['workload']:<11}{x['batch']:>6}{1e3 * x['step_seconds']:>9.1f}{x['step_gflop']:>8.2f}"
                  f"{x['achieved_gflops']:>9.1f}{x['matmul_limit_gflops']:>8.1f}{x['fraction']:>10.3f}")
            if x["compile_seconds"] is not None:
                print(f"{'':<11}compile: {x['compile_seconds']:.1f} s (first step)")
            if "breakdown" in x:
                parts = ", ".join(f"{k} {1e3 * v:.1f}" for k, v in x["breakdown"]["seconds_per_step"].items())
                print(f"{'':<11}ms per step: {parts}")
        print("limit: GFLOP/s of the step's own matrix products run alone on this device; "
              "fraction = (FLOPs / limit) / step time")
        return 0
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
