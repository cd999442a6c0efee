"""The numerics workloads (romae.compendium.numerics): a planted change of arithmetic changes a workload's fingerprint, a planted
refactor does not; `measure` traces the lines they run, which the staleness rule masks (tests/test_staleness*.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from romae.compendium import numerics, workloads

PACKAGE = Path(numerics.__file__).resolve().parents[1]
ROOT = PACKAGE.parent


def _ids_of(root: Path, paths=("model", "train")) -> dict[str, str]:
    """The ids of `paths` computed on the package copy under `root` (in a subprocess)."""
    out = root.parent / "vectors.json"
    env = dict(os.environ, PYTHONPATH=str(root.parent))
    subprocess.run([sys.executable, str(root / "compendium" / "workloads.py"), "--vectors", str(out), "--paths", *paths],
                   cwd=root.parent.parent, env=env, check=True, capture_output=True)
    vectors = json.loads(out.read_text())["vectors"]
    return {p: numerics.identify(p, v) for p, v in vectors.items()}


def _copy(tmp_path) -> Path:
    root = tmp_path / "tree" / "romae"
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_registered_ids_are_the_code_now():
    """The registry knows this code's numbers (else `python -m romae.numerics --register` was forgotten)."""
    ids = numerics.ids()
    assert set(ids) == set(numerics.PATHS) == set(workloads.WORKLOADS)
    assert numerics.IN_WORKLOAD == workloads.IN_WORKLOAD
    assert not [p for p, i in ids.items() if i.startswith("~")], ids


def test_the_workloads_run_most_of_the_library_and_every_module_that_computes():
    """What no workload runs is hashed (sound either way); coverage lets refactors keep their results. 44.6 % of the
    library's function statements ran before issue 51, 56 % with the transfer and kept workloads."""
    import ast

    from romae.compendium import staleness

    lines = numerics.measure()["lines"]
    ran, total, idle = 0, 0, []
    for f in sorted(PACKAGE.glob("*.py")):
        if not staleness.computes(f.name):
            continue
        hit = {ln for w in lines.values() for ln in w.get(f.name, ())}
        stmts = [s.lineno for node in ast.walk(ast.parse(f.read_text()))
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                 for s in ast.walk(node) if isinstance(s, ast.stmt) and s is not node
                 and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        ran, total = ran + sum(ln in hit for ln in stmts), total + len(stmts)
        if stmts and not hit:
            idle.append(f.name)
    print(f"library function statements run by the workloads: {ran}/{total} = {ran / total:.1%}")
    assert ran / total >= 0.55
    assert idle == ["store.py"], idle  # TokenStore (memory-mapped shards) has no workload yet: hashed whole


def test_measure_names_the_lines_each_workload_ran():
    got = numerics.measure()
    assert set(got["ids"]) == set(got["lines"]) == set(numerics.PATHS)
    assert "model.py" in got["lines"]["model"] and "compendium/kept.py" in got["lines"]["kept"]


def test_a_planted_numerics_change_changes_the_fingerprint(monkeypatch):
    before = workloads.vector("model")
    import romae.model as M

    monkeypatch.setattr(M.RMSNorm, "forward", lambda self, x: M.F.rms_norm(x, (x.shape[-1],), self.weight, 1e-3))
    assert not numerics._matches(workloads.vector("model"), before)  # an epsilon
    monkeypatch.undo()
    assert numerics._matches(workloads.vector("model"), before)
    train_before = workloads.vector("train")
    import romae.optim as O

    real = O.lr_at
    monkeypatch.setattr(O, "lr_at", lambda step, total, warmup, lr: real(step, total, warmup, lr) * 1.01)
    import romae.train as T

    monkeypatch.setattr(T, "lr_at", O.lr_at)
    monkeypatch.setattr(T, "_lr_factor", lambda step, total_steps, warmup_steps: O.lr_at(step, total_steps, warmup_steps, 1.0))
    assert not numerics._matches(workloads.vector("train"), train_before)  # a scale


def test_a_planted_refactor_keeps_the_fingerprint(tmp_path):
    """Comments, a renamed private helper and a moved function keep every id (computed from another checkout)."""
    root = _copy(tmp_path)
    model = root / "model.py"
    text = model.read_text().replace("_finite_labels(", "_labels_are_finite(")
    assert "_labels_are_finite(" in text
    model.write_text("# a refactor\n" + text + "\n# the end\n")
    train = root / "train.py"
    train.write_text(train.read_text().replace("_seed_everything", "_seed_all") + "\n# moved helpers below\n")
    assert _ids_of(root) == {p: numerics.ids()[p] for p in ("model", "train")}


@pytest.mark.parametrize("module, old, new", [
    ("rope.py", "k = torch.arange(half, dtype=torch.float64)", "k = torch.arange(half, dtype=torch.float64) * 1.001"),
    # the hand-derived float32 RMSNorm that CPU trainings run (float64 takes F.rms_norm): seen by the float32 part
    ("kernels.py", "rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True).add_(eps))",
     "rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True).add_(eps)) * 1.0001"),
])
def test_a_planted_change_in_a_copy_is_seen(tmp_path, module, old, new):
    root = _copy(tmp_path)
    text = (root / module).read_text()
    assert old in text
    (root / module).write_text(text.replace(old, new))
    assert _ids_of(root, ("model",))["model"] != numerics.ids()["model"]


def test_a_fingerprint_leaves_the_callers_random_states_alone():
    """Computed in the middle of an experiment (a kernel without the memo), the workloads draw nothing of its draws."""
    import random

    import numpy as np

    torch.manual_seed(1), np.random.seed(2), random.seed(3)
    workloads.vector("metrics")
    workloads.vector("train")  # fit seeds torch, numpy and random
    after = torch.rand(1).item(), np.random.rand(), random.random()
    torch.manual_seed(1), np.random.seed(2), random.seed(3)
    assert after == (torch.rand(1).item(), np.random.rand(), random.random())


def test_data_fingerprint_sees_every_value():
    from romae.feeding import ArrayDataset, data_fingerprint

    data = ArrayDataset(values=torch.randn(100, 4, 2), positions=torch.rand(100, 1, 4))
    before = data_fingerprint(data)
    data.tensors["values"][57, 2, 1] += 1e-3  # not one of 16 evenly spaced samples
    assert data_fingerprint(data) != before


def test_measure_like_another_package_compares_on_this_cpu_and_memoises_nothing_so_found(tmp_path, monkeypatch):
    """`measure(package, like=...)` (how `romae.runner.stales` measures a change): an unregistered vector equal to the
    other package's takes its id; a different one keeps its unregistered id without the runs on other kernel sets;
    neither is memoised. Without `like`, an unregistered vector is tried on the other kernel sets (as before)."""
    registered = numerics.registry()["model"]
    base_id, base_vec = next(iter(registered.items()))
    moved = {k: [x * 1.01 + 1.0 for x in xs] for k, xs in numerics._parts(base_vec).items()}  # no registered match
    shifted = {k: [x * (1 + 1e-7) for x in xs] for k, xs in moved.items()}  # `moved` to rounding
    vector = {}
    monkeypatch.setattr(numerics, "PATHS", ("model",))
    monkeypatch.setattr(numerics, "MEMO", tmp_path / "memo")
    monkeypatch.setattr(numerics, "_run", lambda package, paths, *flags, **env: {
        "vectors": {p: vector["now"] for p in paths}, "lines": {p: {"model.py": [1]} for p in paths}})
    tried = []
    monkeypatch.setattr(numerics, "_on_other_kernels", lambda paths, package=None: tried.extend(paths) or {})
    like = {"ids": {"model": "the-base-id"}, "vectors": {"model": moved}}

    vector["now"] = shifted  # equal to `like`'s on this CPU: its id, nothing memoised
    assert numerics.measure(PACKAGE, like=like)["ids"]["model"] == "the-base-id"
    assert tried == [] and not (tmp_path / "memo").exists()
    vector["now"] = {k: [x * 2 for x in xs] for k, xs in moved.items()}  # new arithmetic: unregistered, not retried
    assert numerics.measure(PACKAGE, like=like)["ids"]["model"].startswith("~")
    assert tried == [] and not (tmp_path / "memo").exists()
    found = numerics.measure(PACKAGE)  # without `like`: tried on the other kernel sets, then memoised with its vector
    assert found["ids"]["model"].startswith("~") and tried == ["model"]
    assert found["vectors"]["model"] == vector["now"]
    memo = json.loads(next((tmp_path / "memo").glob("model-*[0-9a-f].json")).read_text())
    assert memo["vector"] == vector["now"] and memo["id"] == found["ids"]["model"]
    vector["now"] = base_vec  # a registered vector is its id whatever `like` says
    monkeypatch.setattr(numerics, "MEMO", tmp_path / "memo2")
    assert numerics.measure(PACKAGE, like=like)["ids"]["model"] == base_id
