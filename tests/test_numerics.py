"""Keys by numbers (issue 42, romae.numerics): a planted change of arithmetic changes a path's fingerprint, a planted
refactor does not; definitions above the library ignore comments, docstrings and imports; the kept record and the
published artefacts stay current when the runner and the compendium are edited (comments, sentences)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from romae import numerics

PACKAGE = Path(numerics.__file__).resolve().parent
ROOT = PACKAGE.parent


def _ids_of(root: Path, paths=("model", "train")) -> dict[str, str]:
    """The ids of `paths` computed on the package copy under `root` (in a subprocess)."""
    out = root.parent / "vectors.json"
    env = dict(os.environ, PYTHONPATH=str(root.parent))
    subprocess.run([sys.executable, str(root / "numerics.py"), "--vectors", str(out), "--paths", *paths],
                   cwd=root.parent.parent, env=env, check=True, capture_output=True)
    vectors = json.loads(out.read_text())
    # on this CPU's kernels: a copy's vector equal to this checkout's has this checkout's id (an AVX-512 CPU matches
    # the registry only through romae.numerics' look-up on another kernel set)
    here = {p: numerics.vector(p) for p in vectors}
    return {p: numerics.ids()[p] if numerics._matches(v, here[p]) else numerics.identify(p, v) for p, v in vectors.items()}


def _copy(tmp_path) -> Path:
    root = tmp_path / "tree" / "romae"
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_registered_ids_are_the_code_now():
    """The registry knows this code's numbers (else `python -m romae.numerics --register` was forgotten)."""
    ids = numerics.ids()
    assert set(ids) == set(numerics.PATHS)
    assert not [p for p, i in ids.items() if i.startswith("~")], ids


def test_every_library_module_is_fingerprinted_or_says_why_not():
    for p in sorted(PACKAGE.glob("*.py")):
        assert numerics.path_of(p.name) or p.name in numerics.INFRASTRUCTURE, p.name


def test_a_planted_numerics_change_changes_the_fingerprint(monkeypatch):
    before = numerics.vector("model")
    import romae.model as M

    monkeypatch.setattr(M.RMSNorm, "forward", lambda self, x: M.F.rms_norm(x, (x.shape[-1],), self.weight, 1e-3))
    assert not numerics._matches(numerics.vector("model"), before)  # an epsilon
    monkeypatch.undo()
    assert numerics._matches(numerics.vector("model"), before)
    train_before = numerics.vector("train")
    import romae.optim as O

    real = O.lr_at
    monkeypatch.setattr(O, "lr_at", lambda step, total, warmup, lr: real(step, total, warmup, lr) * 1.01)
    import romae.train as T

    monkeypatch.setattr(T, "lr_at", O.lr_at)
    monkeypatch.setattr(T, "_lr_factor", lambda step, total_steps, warmup_steps: O.lr_at(step, total_steps, warmup_steps, 1.0))
    assert not numerics._matches(numerics.vector("train"), train_before)  # a scale


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
    numerics.vector("metrics")
    numerics.vector("train")  # fit seeds torch, numpy and random
    after = torch.rand(1).item(), np.random.rand(), random.random()
    torch.manual_seed(1), np.random.seed(2), random.seed(3)
    assert after == (torch.rand(1).item(), np.random.rand(), random.random())


def test_definitions_ignore_comments_docstrings_imports_and_order():
    a = 'import os\n"""doc"""\nX = 1\n\ndef f(x):\n    """about f"""\n    import math\n    return x + X  # add\n'
    b = 'from os import path\n\ndef f(x):\n    return x + X\n# moved\nX = 1\n'
    assert numerics.module_digest(a) == numerics.module_digest(b)
    assert numerics.module_digest(a) != numerics.module_digest(a.replace("x + X", "x - X"))
    assert numerics.definitions(a).keys() == {"X", "f"}


def test_comments_in_runner_and_compendium_leave_kept_trainings_and_artefacts_current(tmp_path, monkeypatch):
    """In a copy of the repository: a comment appended to every runner and compendium module keeps every kept
    training and every published artefact current; a change of the model's arithmetic stales the trainings."""
    from romae.compendium import trainings
    from romae.runner import provenance

    entries = [m for m in trainings.entries() if "code_of" in m][:6]
    if not entries:
        pytest.skip("no kept training carries a numbers key yet")
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "romae", copy / "romae", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "notebooks", copy / "notebooks")
    for f in list((copy / "romae" / "runner").rglob("*.py")) + list((copy / "romae" / "compendium").rglob("*.py")):
        with open(f, "a") as out:
            out.write("\n# a comment appended by the test\n")
    records = [json.loads(p.read_text()) for p in (ROOT / "reports").rglob("provenance/*.json")
               if "dry-run" not in p.relative_to(ROOT / "reports").parts]  # a dry run's (git-ignored) are no artefacts
    records = [r for r in records if r.get("format") == provenance.FORMAT
               and provenance.freshness(r)[0] == "current"]  # a record already stale here says nothing of comments
    assert records, "no current provenance record to check"
    for r in records:
        assert provenance.freshness(r, root=copy)[0] == "current", r["notebook"]
    for m in entries:
        assert trainings.state(m) == "current", m["key"]
    # the model's arithmetic changed: the numerics id of the path moves, so the trainings keyed on it are stale
    monkeypatch.setattr(numerics, "ids", lambda: dict(numerics.PATHS and {p: "changed" for p in numerics.PATHS}))
    for m in entries:
        assert trainings.state(m).startswith("stale"), m["key"]


def test_data_fingerprint_sees_every_value():
    from romae.feeding import ArrayDataset, data_fingerprint

    data = ArrayDataset(values=torch.randn(100, 4, 2), positions=torch.rand(100, 1, 4))
    before = data_fingerprint(data)
    data.tensors["values"][57, 2, 1] += 1e-3  # not one of 16 evenly spaced samples
    assert data_fingerprint(data) != before


def test_a_vector_this_cpu_cannot_match_is_identified_on_another_kernel_set(monkeypatch):
    """An AVX-512 CPU's float32 kernels round the model's workload differently from the AVX2 kernels that registered
    it: the id is then found by running the same code on another ATen kernel set in a fresh process, so kept trainings
    do not read stale (and retrain) on such a CPU. Planted here: the registry's vector of `builders` moved, so only the
    fresh process (which reads the real registry) can name it."""
    real = numerics.registry()["builders"]
    (id_, vec), = real.items()
    moved = {k: [x + 1.0 for x in v] for k, v in vec.items()}
    assert numerics.identify("builders", numerics.vector("builders"), {"builders": {id_: moved}}).startswith("~")
    monkeypatch.setattr(numerics, "CAPABILITIES", ("default",))
    import torch

    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")  # so "default" is tried
    assert numerics._on_other_kernels(["builders"]) == {"builders": id_}
