"""The numerics workloads: tiny deterministic runs whose numbers vouch for the code they execute
(`romae.compendium.numerics` identifies them, `romae.compendium.staleness` masks the lines they run).

Each workload (`WORKLOADS`) runs on the CPU in float64 and in float32 on one thread: a few forward/backward passes and
optimiser steps of small models, eval-mode forwards and the encoder's transfer, `fit` with validation and a resume,
the builders on fixed inputs, the compendium's recipe. `vector` summarises what it returns as numbers (each tensor by
its sum, its sum of squares and its dot product with a fixed pseudo-random vector). Everything goes through the
package's public API (`import romae...` inside the functions), so this file also runs as a script against another
checkout of the package on PYTHONPATH: what `romae.compendium.numerics.measure` does, under a line tracer.

    python -m romae.numerics            # each workload's id (registered or not) and how long it took
    python -m romae.numerics --register # add the current vectors to the registry
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

IN_WORKLOAD = "ROMAE_IN_NUMERICS_WORKLOAD"  # set in the process that runs the workloads (`main`)
DTYPES = ("float64", "float32")


# ----------------------------------------------------------------------------- summarising numbers

def _summary(x, out: list) -> None:
    """Append numbers that pin `x` down: a tensor / array by (sum, sum of squares, projection), a number as it is."""
    import numpy as np
    import torch

    if isinstance(x, dict):
        for k in sorted(x, key=str):
            _summary(x[k], out)
        return
    if isinstance(x, (list, tuple)):
        for v in x:
            _summary(v, out)
        return
    if torch.is_tensor(x):
        x = x.detach().cpu()
        x = x.to(torch.float64).numpy() if x.is_floating_point() or x.dtype == torch.bool else x.numpy()
    if isinstance(x, np.ndarray):
        a = np.asarray(x, dtype=np.float64).reshape(-1)
        w = np.random.default_rng(a.size).standard_normal(a.size)  # fixed per size: a projection that sees order
        out.extend([float(a.sum()), float((a * a).sum()), float(a @ w), float(a.size)])
        return
    if isinstance(x, (bool, int, float, np.number)):
        out.append(float(x))
        return
    if x is None:
        out.append(0.0)
        return
    if isinstance(x, str):  # a name (of a parameter copied, a label): by a number its text gives
        out.append(float(int(hashlib.sha256(x.encode()).hexdigest()[:12], 16)))
        return
    raise TypeError(f"cannot summarise a {type(x).__name__}")


def _precision(dtype: str):
    """`dtype` as the default dtype, one thread, the CPU, full-precision float32 products and no dry run, whatever
    this process was asked for (`romae.runtime`); torch's, numpy's and Python's global random states (which `fit`
    seeds) and those settings restored afterwards, so computing a fingerprint in the middle of an experiment changes
    none of its draws."""
    import contextlib
    import random

    import numpy as np
    import torch

    import romae.runtime as runtime  # absolute: this file also runs as a script against another checkout

    settable = hasattr(runtime, "use")  # an older checkout's fit reads the environment (unset in a re-key's run)

    @contextlib.contextmanager
    def ctx():
        before, threads = torch.get_default_dtype(), torch.get_num_threads()
        states = random.getstate(), np.random.get_state()
        source, matmul = getattr(runtime, "_SOURCE", None), torch.get_float32_matmul_precision()
        torch.set_default_dtype(getattr(torch, dtype))
        torch.set_num_threads(1)
        if settable:  # what this process was asked for (a dry run, a precision) changes no fingerprint
            runtime.use(runtime.Runtime(device="cpu"))
        torch.set_float32_matmul_precision("highest")
        try:
            with torch.random.fork_rng(devices=[]):
                yield
        finally:
            torch.set_default_dtype(before)
            torch.set_num_threads(threads)
            random.setstate(states[0])
            np.random.set_state(states[1])
            if settable:
                runtime.use(source)
            torch.set_float32_matmul_precision(matmul)

    return ctx()


# ----------------------------------------------------------------------------- the workloads

def _tokens(n: int, length: int, dim: int, axes: int = 1, seed: int = 0, padded: bool = False) -> dict:
    import torch

    g = torch.Generator().manual_seed(seed)
    values = torch.randn(n, length, dim, generator=g)
    positions = torch.rand(n, axes, length, generator=g) * 10
    out = dict(values=values, positions=positions)
    if padded:
        pad = torch.zeros(n, length, dtype=torch.bool)
        for i in range(n):
            pad[i, length - 1 - i % 3:] = True
        out["pad_mask"] = pad
    return out


def _small(**kw):
    from romae.config import EncoderConfig

    return EncoderConfig(**dict(dict(d_model=24, n_heads=2, depth=2, d_ff=48), **kw))


def work_model() -> list:
    """Forward and backward of both models over the settings that change their arithmetic."""
    import torch
    from romae.config import RoMAEConfig
    from romae.model import RoMAEForPrediction, RoMAEForPreTraining
    from romae.patching import grid_positions, patch_positions, patchify, unpatchify

    out = []
    variants = [dict(), dict(use_cls=False), dict(pos_encoding="absolute"), dict(p=1.0, rope_base=100.0),
                dict(n_axes=2), dict(normalize_targets=True, mask_token_init="normal"), dict(loss_counts_padding=True),
                dict(encoder=_small(dropout=0.1, drop_path=0.1)), dict(encoder=_small(dropout=0.1, dropout_at="paper"))]
    for i, v in enumerate(variants):
        cfg = RoMAEConfig(token_dim=6, encoder=v.pop("encoder", _small()), decoder=_small(depth=1), **v)
        torch.manual_seed(i)
        model = RoMAEForPreTraining(cfg)
        batch = _tokens(4, 7, 6, axes=cfg.n_axes, seed=i, padded=True)
        torch.manual_seed(100 + i)
        output, loss = model(**batch)
        loss.backward()
        out.append([loss, output] + [p.grad for p in model.parameters() if p.grad is not None])
    heads = [dict(head="cls", task="classification", n_outputs=3, label_smoothing=0.1),
             dict(head="mean", task="regression", n_outputs=2, use_cls=False),
             dict(head="tokens", task="regression", n_outputs=1),
             dict(head="cls", task="classification", n_outputs=3, class_weights=(1.0, 2.0, 0.5), head_dropout=0.1)]
    for i, v in enumerate(heads):
        cfg = RoMAEConfig(token_dim=6, encoder=_small(), **v)
        torch.manual_seed(20 + i)
        model = RoMAEForPrediction(cfg)
        batch = _tokens(4, 7, 6, seed=20 + i, padded=True)
        if cfg.head == "tokens":
            batch["labels"] = torch.randn(4, 7, 1)
        elif cfg.task == "regression":
            batch["labels"] = torch.randn(4, cfg.n_outputs)
        else:
            batch["labels"] = torch.tensor([0, 1, 2, 1])
        torch.manual_seed(200 + i)
        output, loss = model(**batch)
        loss.backward()
        out.append([loss, output] + [p.grad for p in model.parameters() if p.grad is not None])
    x = torch.arange(2 * 8 * 6 * 3, dtype=torch.float64).reshape(2, 8, 6, 3)  # [B, H, W, C]
    tokens = patchify(x, (4, 3))
    out.append([tokens, unpatchify(tokens, (4, 3), (2, 2)), grid_positions((2, 3)),
                patch_positions(tuple(x.shape), (4, 3))])
    return out


def work_train() -> list:
    """A few optimiser steps of `fit` under the settings that change them, `predict`, the plain recipe."""
    import torch
    from romae.config import RoMAEConfig, TrainConfig
    from romae.model import RoMAEForPrediction, RoMAEForPreTraining
    from romae.train import ArrayDataset, fit, lr_at, predict

    out = []
    data = _tokens(12, 6, 4, seed=1, padded=True)
    labels = torch.tensor([0, 1, 2] * 4)
    trains = [dict(), dict(optimizer="sgd", momentum=0.8, grad_clip=0.5), dict(micro_batch=2, warmup_fraction=0.5),
              dict(weight_decay=0.1, betas=(0.8, 0.9), warmup_steps=0, lr=1e-2)]
    for i, t in enumerate(trains):
        cfg = TrainConfig(epochs=2, batch_size=4, lr=t.pop("lr", 1e-3), seed=i, progress=False, log_every=1, **t)
        torch.manual_seed(i)
        model = RoMAEForPrediction(RoMAEConfig(token_dim=4, encoder=_small(), head="cls", n_outputs=3))
        res = fit(model, ArrayDataset(**data, labels=labels), cfg, device="cpu")
        out.append([[r.get("loss") for r in res.history if "loss" in r], list(res.model.parameters())])
        out.append(predict(res.model, ArrayDataset(**data), batch_size=5, device="cpu"))
    cfg = TrainConfig(epochs=1, batch_size=4, lr=1e-3, seed=7, progress=False, log_every=1)
    torch.manual_seed(7)
    mae = RoMAEForPreTraining(RoMAEConfig(token_dim=4, encoder=_small(), decoder=_small(depth=1)))
    res = fit(mae, ArrayDataset(**data), cfg, device="cpu")
    out.append([[r.get("loss") for r in res.history if "loss" in r], list(res.model.parameters())])
    out.append([lr_at(s, 20, 5, 1.0) for s in range(20)])
    return out


def work_metrics() -> list:
    import numpy as np
    from romae import metrics

    rng = np.random.default_rng(0)
    y, scores = rng.integers(0, 4, 50), rng.standard_normal((50, 4))
    t, p = rng.standard_normal((50, 3)), rng.standard_normal((50, 3))
    return [metrics.accuracy(y, scores), metrics.macro_f1(y, scores), metrics.mse(t, p)]


def work_builders() -> list:
    import numpy as np
    import pandas as pd
    from romae.builders import from_long, from_sequences

    rng = np.random.default_rng(1)
    values = [rng.standard_normal((n, 2)) for n in (5, 8, 3)]
    times = [np.sort(rng.uniform(0, 10, n)) for n in (5, 8, 3)]
    a = from_sequences(values, times, labels=["a", "b", "a"])
    b = from_sequences([v[:, :1] for v in values], like=None)
    df = pd.DataFrame(dict(id=np.repeat([1, 2], 4), t=np.tile([0.0, 1.0, 2.5, 3.0], 2),
                           var=np.tile(["x", "y"], 4), v=rng.standard_normal(8)))
    c = from_long(df, id="id", time="t", variable="var", value="v")
    d = from_sequences(values, times, labels=[1.5, -2.0, 0.25], standardize_targets=True)
    e = from_sequences(values[:2], times[:2], labels=[0.5, 3.0], like=d)
    return [dict(a.tensors), dict(b.tensors), dict(c.tensors), dict(d.tensors),  # what the model sees, and `.labels`
            [a.labels, d.labels, e.labels, e.tensors["labels"]]]  # (classes; regression targets in their own units)


def work_images() -> list:
    import numpy as np
    import torch
    from romae.images import from_images, rand_augment

    rng = np.random.default_rng(2)
    images = rng.integers(0, 256, (3, 8, 8, 3)).astype(np.uint8)
    data = from_images(images, labels=[0, 1, 0], patch_size=4)
    batch = data.batch(torch.arange(3))
    torch.manual_seed(3)
    aug = rand_augment()(torch.as_tensor(images).permute(0, 3, 1, 2).float() / 255)
    return [batch, aug]


def work_audio() -> list:
    import torch
    from romae.audio import fbank, fit_to_patches

    t = torch.arange(4000, dtype=torch.float64) / 16000
    wave = torch.sin(2 * torch.pi * 440 * t) + 0.1 * torch.cos(2 * torch.pi * 3000 * t)
    spec = fbank(wave, num_mel_bins=32)
    return [spec, fit_to_patches(spec, 16)]


def work_baselines() -> list:
    import numpy as np
    from romae.baselines import dtw_distances, majority_class, training_mean

    rng = np.random.default_rng(4)
    a = [rng.standard_normal((n, 2)) for n in (6, 9, 4)]
    b = [rng.standard_normal((n, 2)) for n in (5, 7)]
    return [dtw_distances(a, b, window=None), dtw_distances(a, b, window=0.5), majority_class([1, 2, 2], 3),
            training_mean(np.array([[1.0], [3.0]]), 2)]


def work_transfer() -> list:
    """What a pre-train -> fine-tune -> evaluate run does besides the steps: eval-mode forwards (dropout, drop path),
    the encoder's transfer, interpolation by `reconstruct`, `fit` with validation, metrics, checkpoints and a resume,
    `predict` as labels, the plain recipe end to end."""
    import tempfile

    import torch
    from romae.config import RoMAEConfig, TrainConfig
    from romae.masking import random_mask
    from romae.model import RoMAEForPrediction, RoMAEForPreTraining
    from romae.recipe import pretrain_finetune
    from romae.train import ArrayDataset, fit, predict

    out = []
    torch.manual_seed(30)
    enc = _small(dropout=0.1, drop_path=0.1)
    mae = RoMAEForPreTraining(RoMAEConfig(token_dim=4, encoder=enc, decoder=_small(depth=1)))
    clf = RoMAEForPrediction(RoMAEConfig(token_dim=4, encoder=enc, head="cls", n_outputs=3))
    batch = _tokens(5, 6, 4, seed=30, padded=True)
    mae.eval(), clf.eval()
    with torch.no_grad():
        out.append(list(mae(**batch)) + [clf(**batch)[0]])
        mask = random_mask(5, 6, 0.5, pad_mask=batch["pad_mask"], generator=torch.Generator().manual_seed(31))
        out.append(mae.reconstruct(batch["values"], batch["positions"], mask, pad_mask=batch["pad_mask"]))
    out.append(sorted(clf.load_encoder(mae)) + sorted(clf.load_encoder(mae.state_dict(), embedding=True)))
    out.append(list(clf.parameters()))
    data = _tokens(12, 6, 4, seed=32, padded=True)
    labels = torch.tensor([0, 1, 2] * 4)
    cfg = TrainConfig(epochs=2, batch_size=4, lr=1e-3, seed=33, progress=False, log_every=1, eval_every=2)
    with tempfile.TemporaryDirectory() as tmp:
        torch.manual_seed(33)
        model = RoMAEForPrediction(RoMAEConfig(token_dim=4, encoder=enc, head="cls", n_outputs=3))
        first = fit(model, ArrayDataset(**data, labels=labels), cfg, val_data=ArrayDataset(**data, labels=labels),
                    metrics=("accuracy",), out_dir=tmp, max_steps=3, device="cpu")
        torch.manual_seed(33)
        model = RoMAEForPrediction(RoMAEConfig(token_dim=4, encoder=enc, head="cls", n_outputs=3))
        res = fit(model, ArrayDataset(**data, labels=labels), cfg, val_data=ArrayDataset(**data, labels=labels),
                  metrics=("accuracy",), out_dir=tmp, device="cpu")
    rows = [[r.get(k) for k in ("loss", "val_loss", "val_accuracy") if r.get(k) is not None] for r in res.history]
    out.append([first.steps, res.steps, rows, list(res.model.parameters())])
    torch.manual_seed(35)  # a pre-training validated: its loss averages over the hidden tokens it counts
    mae = RoMAEForPreTraining(RoMAEConfig(token_dim=4, encoder=_small(), decoder=_small(depth=1)))
    pre = fit(mae, ArrayDataset(**data), TrainConfig(epochs=1, batch_size=5, lr=1e-3, seed=35, progress=False,
                                                    log_every=1, eval_every=2),
              val_data=ArrayDataset(**data), device="cpu")
    out.append([[r.get(k) for k in ("loss", "val_loss") if r.get(k) is not None] for r in pre.history])
    out.append(predict(res.model, ArrayDataset(**data), batch_size=5, device="cpu", as_labels=True, classes=[0, 1, 2]))
    model_cfg = RoMAEConfig(token_dim=4, encoder=_small(), decoder=_small(depth=1))
    small = TrainConfig(epochs=1, batch_size=4, lr=1e-3, seed=34, progress=False, log_every=1)
    torch.manual_seed(34)
    got = pretrain_finetune("w", ArrayDataset(**data, labels=labels), ArrayDataset(**data, labels=labels), model_cfg,
                            finetune=small, pretrain=small, n_outputs=3, seed=34)
    out.append([got["metrics"], got["outputs"], list(got["model"].parameters())])
    return out


def work_kept() -> list:
    """The compendium's recipe as the experiments run it (`romae.compendium.kept.pretrain_finetune_kept`: its trainings
    through `fit_cached`, its evaluation through `kept`), into a results cache of its own, then read back from it."""
    import tempfile

    import torch
    from romae.compendium.kept import pretrain_finetune_kept as pretrain_finetune
    from romae.config import RoMAEConfig, TrainConfig
    from romae.train import ArrayDataset

    data = _tokens(12, 6, 4, seed=40, padded=True)
    labels = torch.tensor([0, 1, 2] * 4)
    model_cfg = RoMAEConfig(token_dim=4, encoder=_small(), decoder=_small(depth=1))
    small = TrainConfig(epochs=1, batch_size=4, lr=1e-3, seed=41, progress=False, log_every=1)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(2):  # trained, then found in the cache
            got = pretrain_finetune("w", ArrayDataset(**data, labels=labels), ArrayDataset(**data, labels=labels),
                                    model_cfg, finetune=small, pretrain=small, n_outputs=3, seed=42,
                                    key={"data": "numerics"}, cache_dir=tmp)
            out.append([got["metrics"], got["outputs"], list(got["model"].parameters()),
                        [[r.get("loss") for r in h if "loss" in r] for h in (got["pretrain_history"],
                                                                              got["finetune_history"])]])
        out.append(_travelled(tmp, data, model_cfg))
    return out


def _travelled(tmp: str, data: dict, model_cfg) -> list:
    """A kept training stopped cleanly after its third step (a stop asked, a deadline far ahead), its checkpoint left
    in a record of trainings; then, on a "fresh clone" (no runs/, another cache), continued from that record to its
    end (`romae.compendium.travel`)."""
    import dataclasses
    import os
    import shutil
    import time
    from pathlib import Path

    import romae.runtime as runtime
    from romae.compendium import kept, travel
    from romae.config import TrainConfig
    from romae.model import RoMAEForPreTraining

    calls: list[int] = []

    def stop_at_third(batch):  # the same batches as without it: it only asks, once
        calls.append(1)
        if len(calls) == 3:
            runtime.request_stop("asked by the workload")
        return batch

    runs, env, source = kept.RUNS, os.environ.get("ROMAE_TRAININGS"), runtime._SOURCE
    kept.RUNS, os.environ["ROMAE_TRAININGS"] = Path(tmp) / "runs", str(Path(tmp) / "record")
    runtime.use(dataclasses.replace(runtime.current(), deadline=time.time() + 3600))
    cfg = TrainConfig(epochs=2, batch_size=4, lr=1e-3, seed=44, progress=False, log_every=1, checkpoint_every=2)
    out = []
    try:
        for piece in range(2):
            try:
                got = kept.fit_cached("w_travel", RoMAEForPreTraining, model_cfg, data, cfg, {"data": "numerics"},
                                      seed=45, cache_dir=Path(tmp) / f"cache-{piece}", transform=stop_at_third)
                out.append([list(got["state_dict"].values()), [r["loss"] for r in got["history"] if "loss" in r]])
            except travel.TrainingPaused as e:
                out.append([e.steps, e.total])
                runtime.clear_stop()
                shutil.rmtree(kept.RUNS)  # a fresh clone: only the record travels
        out.append(len(travel.listing(Path(tmp) / "record")))  # removed once finished
    finally:
        kept.RUNS, runtime._STOP[:] = runs, []
        runtime.use(source)
        os.environ.pop("ROMAE_TRAININGS") if env is None else os.environ.update(ROMAE_TRAININGS=env)
    return out


WORKLOADS = {"model": work_model, "train": work_train, "transfer": work_transfer, "kept": work_kept,
             "metrics": work_metrics, "builders": work_builders,
             "images": work_images, "audio": work_audio, "baselines": work_baselines}


def vector(path: str) -> dict[str, list[float]]:
    """The numbers of `path`'s workload, run once with float64 and once with float32 defaults (one CPU thread, fixed
    seeds): {"float64": [...], "float32": [...]}."""
    import warnings

    out: dict[str, list[float]] = {}
    for dtype in DTYPES:
        numbers: list[float] = []
        with _precision(dtype), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _summary(WORKLOADS[path](), numbers)
        out[dtype] = numbers
    return out


# ----------------------------------------------------------------------------- running them

def _traced(fn):
    """(fn(), {file: [lines]}): the lines of this package's modules (this one's workloads left out) that fn ran."""
    import os
    import threading

    import romae  # the package the workloads import: this checkout's, or another's on PYTHONPATH

    prefix, lines = str(Path(romae.__file__).resolve().parent) + os.sep, {}

    def calls(frame, event, arg):
        name = frame.f_code.co_filename
        if not name.startswith(prefix) or name.endswith(f"{os.sep}numerics.py"):
            return None
        seen = lines.setdefault(name[len(prefix):].replace(os.sep, "/"), set())

        def each(frame, event, arg):
            if event == "line":
                seen.add(frame.f_lineno)
            return each
        return each

    sys.settrace(calls)
    threading.settrace(calls)
    try:
        out = fn()
    finally:
        sys.settrace(None)
        threading.settrace(None)
    return out, {f: sorted(v) for f, v in sorted(lines.items())}


def main(argv: list[str] | None = None) -> int:
    import argparse
    import time

    parser = argparse.ArgumentParser(prog="python -m romae.numerics", description=__doc__.split("\n\n")[0])
    parser.add_argument("--register", action="store_true", help="add the current vectors to the registry")
    parser.add_argument("--vectors", metavar="JSON", help="write {vectors: {path: vector}, lines: ...} to this file")
    parser.add_argument("--lines", action="store_true", help="trace the lines each workload runs (into --vectors)")
    parser.add_argument("--paths", nargs="*", default=list(WORKLOADS), help="which workloads (default: all)")
    parser.add_argument("--here", action="store_true",
                        help="this CPU's kernels only (do not look for the id on another kernel set)")
    parser.add_argument("--quiet", action="store_true", help="print nothing")
    args = parser.parse_args(argv)
    import os

    os.environ[IN_WORKLOAD] = "1"  # this process runs the workloads: what they keep is keyed without measuring
    if args.quiet and args.vectors and not args.register:  # measure's run (maybe against another checkout)
        numerics = None
    else:
        from romae.compendium import numerics
    known = numerics.registry() if numerics else {}
    vectors, lines = {}, {}
    for p in args.paths:
        t0 = time.perf_counter()
        if args.lines:
            try:  # another checkout may lack what a workload calls: that workload vouches for nothing there
                vectors[p], lines[p] = _traced(lambda: vector(p))
            except Exception as e:  # noqa: BLE001 -- whatever the other code raises
                vectors[p], lines[p] = None, {}
                print(f"{p}: the workload failed ({type(e).__name__}: {e})", file=sys.stderr)
                continue
        else:
            vectors[p] = vector(p)
        if numerics is None:
            continue
        id_ = numerics.identify(p, vectors[p], known)
        if id_.startswith("~") and not args.here and not args.register:
            id_ = numerics._on_other_kernels([p]).get(p, id_)
            if not id_.startswith("~"):
                id_ += " (on another kernel set: this CPU rounds differently)"
        n = sum(len(x) for x in vectors[p].values())
        if not args.quiet:
            print(f"{p:10s} {id_:14s} {n:5d} numbers  {time.perf_counter() - t0:5.1f} s"
                  + ("  (not registered)" if id_.startswith("~") else ""))
        if args.register and id_.startswith("~"):
            known.setdefault(p, {})[id_[1:]] = vectors[p]
    if args.vectors:
        Path(args.vectors).write_text(json.dumps({"vectors": vectors, "lines": lines}) + "\n")
    if args.register:
        numerics.REGISTRY.write_text(json.dumps(known, indent=0, sort_keys=True) + "\n")
        print(f"registry: {numerics.REGISTRY}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
