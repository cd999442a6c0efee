"""What a result is keyed by: the numbers the code produces, not the bytes of its files.

A cached result or kept training names the code that made it by a short code id (`code_id`). For the library
(the model, the loop, the builders...) that id comes from a *numerics fingerprint* per code path (`PATHS`): a tiny
deterministic workload run on the CPU in float64 on one thread (a few forward/backward passes and optimiser steps of
small models, the builders on fixed inputs), summarised as a vector of numbers (each tensor by its sum, its sum of
squares and its dot product with a fixed pseudo-random vector). A comment, a rename, a moved function or a
refactor that keeps the arithmetic leaves the vector equal (to rounding, `RTOL`); a changed epsilon, scale or
formula moves it. Vectors seen before are kept, under their ids, in `numerics.json` beside this module (the
registry), so a vector equal within RTOL to a registered one gets that one's id on any machine (another CPU's
kernels round differently in the last bits); an unregistered vector gets an id from its rounded values, and
`python -m romae.numerics --register` adds it (what a deliberate numerics change does, with the re-key step).

Code outside the library (the data loaders, the experiments, the compendium's statistics) is identified by its
*definitions*: each top-level function, class or assignment hashed by its syntax tree with docstrings, comments and
import statements left out (`definitions`), so comments, docstrings, re-ordered or moved definitions and changed
imports keep the id, and a changed body does not.

    python -m romae.numerics            # each path's id (registered or not) and how long its workload took
    python -m romae.numerics --register # add the current vectors to the registry

This module runs the workloads through the public API only (`import romae...` inside functions), so it can also run
against another checkout of the package (`--tree`), which is how a re-key proves old and new code compute the same.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
REGISTRY = PACKAGE / "numerics.json"
# a vector matches a registered one when every entry agrees this closely: float64 workloads to 1e-6, float32 ones
# (what trainings on a CPU run: the hand-derived float32 RMSNorm, RoPE's float32 rotation, fused AdamW) to 1e-5,
# the rounding another CPU's kernels may add over a few steps
RTOL, ATOL = 1e-6, 1e-9
RTOL32 = 1e-5
DTYPES = ("float64", "float32")
ROUND = 6  # significant digits of an unregistered vector's id

# path -> the library modules whose numbers its workload covers (file names in romae/)
PATHS = {
    "model": ("config.py", "rope.py", "patching.py", "masking.py", "kernels.py", "inputs.py", "model.py"),
    "train": ("train.py", "engine.py", "graphs.py", "optim.py", "feeding.py", "checkpoint.py", "recipe.py"),
    "metrics": ("metrics.py",),
    "builders": ("builders.py", "sequence_checks.py", "store.py"),
    "images": ("images.py",),
    "audio": ("audio.py",),
    "baselines": ("baselines.py",),
}
# library modules that store, key or describe results but never compute one
INFRASTRUCTURE = ("__init__.py", "cache.py", "files.py", "runtime.py", "numerics.py", "bench.py", "promise.py",
                  "reproduce.py", "gpucheck.py", "trainings.py")
# code above the library that records, tells or lays out results without computing them: never in an id
# (the plan, its memory and time model and the cost model estimate time and memory and choose micro-batches, which
# change how a batch goes through memory, not what is learnt: never in a key, as before the re-key)
NOT_NUMBERS = ("compendium/terminal.py", "compendium/trainings.py", "compendium/settings.py", "compendium/kept.py",
               "compendium/__init__.py", "compendium/plan.py", "compendium/footprint.py", "compendium/cost.py",
               "runner/")


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
    return [dict(a.tensors), dict(b.tensors), dict(c.tensors)]


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


WORKLOADS = {"model": work_model, "train": work_train, "metrics": work_metrics, "builders": work_builders,
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


# ----------------------------------------------------------------------------- ids

def _parts(v) -> dict[str, list[float]]:
    return v if isinstance(v, dict) else {"float64": list(v)}  # a plain list: a float64 vector


def _close(a: list[float], b: list[float], rtol: float) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= ATOL + rtol * max(abs(x), abs(y)) for x, y in zip(a, b))


def _matches(a, b) -> bool:
    """Whether two vectors (`vector`'s dicts) agree: the same parts, each within its tolerance."""
    a, b = _parts(a), _parts(b)
    return a.keys() == b.keys() and all(_close(a[k], b[k], RTOL32 if k == "float32" else RTOL) for k in a)


def max_rel_diff(a, b) -> float:
    """The largest relative difference between two vectors' entries (inf when their shapes differ)."""
    a, b = _parts(a), _parts(b)
    if a.keys() != b.keys() or any(len(a[k]) != len(b[k]) for k in a):
        return float("inf")
    return max((abs(x - y) / max(abs(x), abs(y), 1e-300) for k in a for x, y in zip(a[k], b[k])), default=0.0)


def _rounded_id(v) -> str:
    digits = {k: ROUND if k == "float64" else ROUND - 2 for k in _parts(v)}
    text = json.dumps({k: [float(f"{x:.{digits[k]}g}") for x in xs] for k, xs in sorted(_parts(v).items())})
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def registry(path: Path = REGISTRY) -> dict:
    """{path: {id: vector}}: the vectors seen before (`--register`)."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        return {}


def identify(path: str, v, known: dict | None = None) -> str:
    """The id of `path`'s vector `v`: a registered vector's id when one matches within RTOL, else one from v's
    rounded values (marked '~': not registered)."""
    for id_, w in (registry() if known is None else known).get(path, {}).items():
        if _matches(v, w):
            return id_
    return "~" + _rounded_id(v)


def _source_state() -> str:
    """What the workloads' numbers depend on besides the code's arithmetic: the library's bytes (a cheap guard for the
    on-disk memo), torch and numpy versions."""
    import numpy as np
    import torch

    h = hashlib.sha256(f"{torch.__version__} {np.__version__} {torch.backends.cpu.get_cpu_capability()}".encode())
    for f in sorted(PACKAGE.glob("*.py")):
        h.update(f.name.encode() + f.read_bytes())
    h.update(REGISTRY.read_bytes() if REGISTRY.exists() else b"")
    return h.hexdigest()[:20]


@functools.lru_cache(maxsize=None)
def ids() -> dict[str, str]:
    """Every path's current id: computed once per process, memoised on disk (.cache/romae/numerics/) by the library's
    bytes, so an unchanged library costs nothing and a changed one reruns the workloads (a few seconds)."""
    memo = PACKAGE.parent / ".cache" / "romae" / "numerics" / f"{_source_state()}.json"
    try:
        return json.loads(memo.read_text())
    except (OSError, ValueError):
        pass
    out = {p: identify(p, vector(p)) for p in PATHS}
    out.update(_on_other_kernels([p for p, i in out.items() if i.startswith("~")]))
    try:
        from .files import write_atomic

        memo.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(memo, json.dumps(out, indent=1, sort_keys=True) + "\n")
    except OSError:  # a read-only checkout: recomputed next time
        pass
    return out


CAPABILITIES = ("avx2", "default")  # ATen's CPU kernel sets below AVX-512, tried for a vector this CPU cannot match


def _on_other_kernels(paths: list[str]) -> dict[str, str]:
    """{path: registered id} for those of `paths` whose workload, run by this same code in a fresh process on another
    of ATen's CPU kernel sets (`CAPABILITIES`, via ATEN_CPU_CAPABILITY), gives a registered vector: the code is the
    registered code and only this CPU's kernels round differently (seen: an AVX-512 CPU's float32 attention differs
    from the AVX2 kernels' that registered the ids by up to 3e-5, and by 1e-7 on sums that cancel to ~0). Without
    this, every kept training would read stale on such a CPU and a run would train again what it has. Paths no kernel
    set matches keep their unregistered id."""
    import os
    import subprocess
    import tempfile

    import torch

    found: dict[str, str] = {}
    here = torch.backends.cpu.get_cpu_capability().lower()
    for cap in CAPABILITIES:
        todo = [p for p in paths if p not in found]
        if not todo or cap == here or os.environ.get("ATEN_CPU_CAPABILITY", "").lower() == cap:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "vectors.json"
            env = dict(os.environ, ATEN_CPU_CAPABILITY=cap,
                       PYTHONPATH=os.pathsep.join([str(PACKAGE.parent), os.environ.get("PYTHONPATH", "")]))
            try:
                subprocess.run([sys.executable, "-m", "romae.numerics", "--paths", *todo, "--vectors", str(out),
                                "--here"], cwd=tmp, env=env, check=True, capture_output=True, timeout=600)
                vectors = json.loads(out.read_text())
            except (OSError, ValueError, subprocess.SubprocessError):
                continue
        for p, v in vectors.items():
            id_ = identify(p, v)
            if not id_.startswith("~"):
                found[p] = id_
    return found


def path_of(module: str) -> str | None:
    """The path whose workload covers library module `module` ('model.py'), else None."""
    return next((p for p, mods in PATHS.items() if module in mods), None)


# ----------------------------------------------------------------------------- definitions (above the library)

def _strip(node: ast.AST) -> ast.AST:
    """`node` without docstrings and import statements (anywhere in it)."""

    class Strip(ast.NodeTransformer):
        def _body(self, n):
            body = [s for s in n.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                body = body[1:]
            n.body = body or [ast.Pass()]
            self.generic_visit(n)
            return n

        visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = visit_Module = _body

        def generic_visit(self, n):
            for field in ("body", "orelse", "finalbody"):
                seq = getattr(n, field, None)
                if isinstance(seq, list) and seq and isinstance(seq[0], ast.stmt):
                    kept = [s for s in seq if not isinstance(s, (ast.Import, ast.ImportFrom))]
                    setattr(n, field, kept or ([ast.Pass()] if field == "body" else []))
            return super().generic_visit(n)

    return Strip().visit(node)


def definitions(source: str) -> dict[str, str]:
    return dict(_definitions(source))


@functools.lru_cache(maxsize=512)
def _definitions(source: str) -> tuple:  # memoised by the source text: a key is made for every kept result
    return tuple(_parse_definitions(source).items())


def _parse_definitions(source: str) -> dict[str, str]:
    """{name: hash} of a module's top-level definitions (functions, classes, assignments; other statements by their
    own hash), from the syntax tree without docstrings, comments and imports."""
    tree = _strip(ast.parse(source))
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Pass)):
            continue
        text = ast.dump(node, annotate_fields=False, include_attributes=False)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = node.name
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            name = ",".join(sorted(ast.unparse(t) for t in targets))
        else:
            name = f"<{digest}>"
        out[name] = digest if name not in out else hashlib.sha256((out[name] + digest).encode()).hexdigest()[:16]
    return out


@functools.lru_cache(maxsize=512)
def module_digest(source: str) -> str:
    """One hash of a module's definitions (`definitions`), whatever their order."""
    return hashlib.sha256(json.dumps(sorted(definitions(source).items())).encode()).hexdigest()[:16]


def counts_as_code(rel: str) -> bool:
    """Whether package file `rel` ('experiments/uea/protocol.py', 'compendium/report.py') can change a result."""
    return not any(rel == x or (x.endswith("/") and rel.startswith(x)) for x in NOT_NUMBERS)


def code_of(files: tuple[str, ...], root: Path = PACKAGE) -> dict:
    """The code a result depends on, by numbers: {"numerics": {path: id} for the library modules among `files`,
    "definitions": {file: digest} for the others that can change a result}. `files`: package-relative paths."""
    numerics, defs = {}, {}
    for rel in files:
        if "/" not in rel:
            if rel in INFRASTRUCTURE:
                continue
            path = path_of(rel)
            if path is None:
                raise KeyError(f"romae/{rel} is in no numerics path (romae.numerics.PATHS) nor INFRASTRUCTURE: "
                               "give it a workload or say why it computes nothing")
            numerics[path] = ids()[path]
        elif counts_as_code(rel):
            defs[rel] = module_digest((root / rel).read_text())
    return {"numerics": dict(sorted(numerics.items())), "definitions": dict(sorted(defs.items()))}


def code_id(code: dict) -> str:
    """A short id of `code_of`'s answer: what a key's last part is made of."""
    return hashlib.sha256(json.dumps(code, sort_keys=True).encode()).hexdigest()


# ----------------------------------------------------------------------------- command line

def main(argv: list[str] | None = None) -> int:
    import argparse
    import time

    parser = argparse.ArgumentParser(prog="python -m romae.numerics", description=__doc__.split("\n\n")[0])
    parser.add_argument("--register", action="store_true", help="add the current vectors to the registry")
    parser.add_argument("--vectors", metavar="JSON", help="write {path: vector} to this file")
    parser.add_argument("--paths", nargs="*", default=list(PATHS), help="which paths (default: all)")
    parser.add_argument("--here", action="store_true",
                        help="this CPU's kernels only (do not look for the id on another kernel set)")
    args = parser.parse_args(argv)
    known, vectors = registry(), {}
    for p in args.paths:
        t0 = time.perf_counter()
        vectors[p] = vector(p)
        id_ = identify(p, vectors[p], known)
        if id_.startswith("~") and not args.here and not args.register:
            id_ = _on_other_kernels([p]).get(p, id_)
            if not id_.startswith("~"):
                id_ += " (on another kernel set: this CPU rounds differently)"
        n = sum(len(x) for x in vectors[p].values())
        print(f"{p:10s} {id_:14s} {n:5d} numbers  {time.perf_counter() - t0:5.1f} s"
              + ("  (not registered)" if id_.startswith("~") else ""))
        if args.register and id_.startswith("~"):
            known.setdefault(p, {})[id_[1:]] = vectors[p]
    if args.vectors:
        Path(args.vectors).write_text(json.dumps(vectors) + "\n")
    if args.register:
        REGISTRY.write_text(json.dumps(known, indent=0, sort_keys=True) + "\n")
        print(f"registry: {REGISTRY}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
