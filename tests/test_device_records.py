"""Records by device class (`romae.compendium.devices`): code that runs only on CUDA is out of what a CPU result's
record decides, and in what a CUDA result's record checks.

* the units `ONLY_ON` names never run on a CPU: no numerics workload executes them and a traced CPU `fit` (with a
  padded dataset and a batch transform, the paths that touch the graph machinery) never enters them; a call of one
  is seen by the same tracer (the check can fail);
* the frozen table is what the rule gives for those units where their source has not changed since;
* every committed record of the sound rule without `device_units` was made on a CPU (what reading such a record as
  a CPU's rests on);
* a CUDA result whose CUDA-only code changed is found under its key but retrained (the loader's verdict), while a CPU
  result of the same key is used; the results cache refuses it too.
The mutation test (tests/test_staleness_mutations.py) plants the same edits both ways: graphs_* stale CUDA results and
nothing computed on a CPU.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest
import torch

from romae import graphs, masking
from romae.compendium import devices, staleness, trainings
from romae.compendium.cache import key_of

PACKAGE = staleness.PACKAGE


def _body_lines() -> dict[str, set[int]]:
    """{file: lines} of the bodies of every unit `ONLY_ON` names (a function's statements, a class's methods')."""
    out: dict[str, set[int]] = {}
    tree = staleness.here()
    for place, (rel, node) in tree.units.items():
        if not devices.only_on(place) or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        out.setdefault(rel, set()).update(ln for s in node.body for ln in range(s.lineno, s.end_lineno + 1))
    return out


def test_only_on_names_real_units():
    tree = staleness.here()
    for places in devices.ONLY_ON.values():
        for p in places:
            assert p in tree.units, f"ONLY_ON names {p}, which is not a unit of the package"
    lines = _body_lines()
    assert lines.get("graphs.py") and lines.get("masking.py")


def test_no_numerics_workload_runs_code_only_on_cuda():
    measured = staleness.here().measured()["lines"]
    assert measured, "no workload measured"
    for workload, files in measured.items():
        for rel, body in _body_lines().items():
            ran = body & set(files.get(rel, ()))
            assert not ran, f"the {workload} workload (on the CPU) runs {rel} lines {sorted(ran)[:5]} of code ONLY_ON cuda"


def _traced(fn) -> dict[str, set[int]]:
    """{file: lines} of graphs.py and masking.py that `fn()` executes."""
    files = {str(Path(graphs.__file__).resolve()): "graphs.py", str(Path(masking.__file__).resolve()): "masking.py"}
    hit: dict[str, set[int]] = {}

    def tracer(frame, event, arg):
        rel = files.get(frame.f_code.co_filename)
        if rel is None:
            return None
        if event == "line":
            hit.setdefault(rel, set()).add(frame.f_lineno)
        return tracer

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(old)
    return hit


def _tiny_fit():
    from romae import RoMAEConfig, RoMAEForPreTraining, TrainConfig, size
    from romae.train import ArrayDataset, fit

    g = torch.Generator().manual_seed(0)
    x = torch.randn(12, 20, 2, generator=g)
    pad = torch.zeros(12, 20, dtype=torch.bool)
    pad[::2, 15:] = True
    data = ArrayDataset(values=x, positions=torch.arange(20.0).expand(12, 1, 20).clone(), pad_mask=pad)
    model = RoMAEForPreTraining(RoMAEConfig(token_dim=2, n_axes=1, encoder=size("tiny-shallow"), mask_ratio=0.5),
                                seed=0)
    fit(model, data, TrainConfig(epochs=2, batch_size=4, lr=1e-3, warmup_steps=1, seed=0, progress=False),
        transform=masking.trim_padding)


def test_a_traced_cpu_fit_never_enters_code_only_on_cuda():
    hit = _traced(_tiny_fit)
    assert hit.get("masking.py"), "the tracer saw nothing of masking.py: it cannot tell"
    for rel, body in _body_lines().items():
        ran = body & hit.get(rel, set())
        assert not ran, f"a CPU fit ran {rel} lines {sorted(ran)[:5]}, in code ONLY_ON cuda: it is not CUDA-only"


def test_the_tracer_sees_code_only_on_cuda_when_it_runs():
    """The check above can fail: calling one of those units is seen."""
    hit = _traced(lambda: graphs.signature({"x": torch.zeros(2)}))
    assert _body_lines()["graphs.py"] & hit.get("graphs.py", set())


def test_frozen_entries_are_the_rule_where_their_source_is_unchanged():
    table = devices.frozen()
    assert set(table) >= {"graphs.py:GraphedSteps.__call__", "masking.py:GraphChecks.after_replay"}
    full = staleness.here().view("cuda")
    same = 0
    for place, held in table.items():
        assert "@" not in held["entry"], f"{place}: a frozen entry vouched for by a CPU workload"
        assert devices.only_on(place) == "cuda"
        if place in full.units and full.content(place, 1) == held["content"][0]:
            same += 1
            assert full.entry(place) == held["entry"] or any(
                devices.only_on(r) for r in full._plain(place)[1]), f"{place}: frozen entry is not what the rule gives"
    assert same >= 1


def test_a_cpu_record_holds_frozen_entries_a_cuda_one_its_units_as_they_are():
    roots = list(staleness.TRAINING_ROOTS)
    cpu, cuda = staleness.record(roots, device="cpu"), staleness.record(roots, device="cuda")
    assert staleness.code_id(cpu) == staleness.code_id(cuda)  # one key on every device
    assert "device_units" not in cpu and staleness.device_of(cpu) == "cpu"
    assert staleness.device_of(cuda) == "cuda" and "graphs.py:GraphedSteps.__call__" in cuda["device_units"]
    frozen = devices.frozen()
    assert cpu["units"]["graphs.py:GraphedSteps.__call__"] == frozen["graphs.py:GraphedSteps.__call__"]["entry"]
    assert staleness.check(cpu) == [] and staleness.check(cuda) == []
    old = json.loads(json.dumps(cuda))
    old["device_units"]["graphs.py:GraphedSteps.__call__"] = "0" * 16
    assert staleness.check(old) == ["graphs.py:GraphedSteps.__call__: changed (it ran on CUDA)"]


def test_committed_records_without_device_units_were_made_on_cpus():
    folder = trainings.DEFAULT
    seen = 0
    for twin in sorted(folder.rglob("*.json")):
        meta = json.loads(twin.read_text())
        rec = meta.get("code_of") if isinstance(meta, dict) else None
        if not staleness.is_record(rec) or "device_units" in rec:
            continue
        seen += 1
        assert devices.class_of(meta.get("device")) == "cpu", f"{twin.name}: a record without device_units made on " \
                                                               f"{meta.get('device')}: it would be read as a CPU's"
    assert seen >= 10


def _entry(folder: Path, rec: dict, device: str) -> str:
    code = staleness.code_id(rec)
    name = key_of("graphs_probe", {"n": 1}, code)
    trainings.save(name, {"x": torch.ones(1)}, {"config": {"n": 1}, "code": code, "code_of": rec}, folder=folder)
    twin = folder / f"{name}.json"
    meta = json.loads(twin.read_text())
    meta["device"] = device
    meta[trainings.SEAL] = trainings.seal_of(meta)
    twin.write_text(json.dumps(meta))
    return name


def test_a_cuda_result_stale_in_cuda_only_code_is_retrained_a_cpu_one_used(tmp_path):
    roots = list(staleness.TRAINING_ROOTS)
    cuda = staleness.record(roots, device="cuda")
    cuda["device_units"]["graphs.py:GraphedSteps.__call__"] = "0" * 16  # as if made before an edit there
    gpu, cpu = tmp_path / "gpu", tmp_path / "cpu"
    gpu.mkdir(), cpu.mkdir()
    name = _entry(gpu, cuda, "NVIDIA H200")
    verdict = trainings.check(gpu, name)[0]
    assert verdict.action == trainings.RETRAIN and "it ran on CUDA" in verdict.why
    assert trainings.load(name, folders=[gpu]) == (False, None)
    assert _entry(cpu, staleness.record(roots, device="cpu"), "cpu (AMD EPYC, 2 threads)") == name  # same key
    assert trainings.check(cpu, name)[0].action == trainings.USE
    assert trainings.load(name, folders=[cpu])[0]
    from romae import storage

    assert storage.OUTDATED is not None and storage.OUTDATED(gpu / f"{name}.json")
    assert not storage.OUTDATED(cpu / f"{name}.json")


@pytest.mark.parametrize("cell, cls", [
    ("cpu (AMD EPYC, 2 threads); torch 2.13.0+cpu, CUDA none, fp32, 1 process", "cpu"),
    ("exact count", "cpu"),
    ("trained on NVIDIA H200; published on cpu (AMD EPYC, 2 threads); torch 2.13.0+cpu", "cuda"),
    ("trained on cpu (Intel(R) Xeon(R) Processor, 2 threads), cpu (AMD EPYC, 2 threads); published on cpu (AMD EPYC, "
     "2 threads); torch", "cpu"),
    ("NVIDIA H100 80GB HBM3; torch 2.11.0+cu130, CUDA 13.0", "cuda"),
    ("AMD Instinct MI300X; torch", "cuda"),
])
def test_the_class_of_a_published_run_from_its_device_cells(cell, cls):
    assert devices.class_of_rows([cell]) == cls
    assert devices.class_of_rows(["cpu (x, 2 threads); t", cell]) == cls


def test_class_of_a_device():
    assert [devices.class_of(d) for d in ("cpu", torch.device("cpu"), "cuda", "cuda:1", "mps", "NVIDIA H200", None)] \
        == ["cpu", "cpu", "cuda", "cuda", "cpu", "cuda", "cuda"]
    assert devices.classes_from("cuda") == ["cuda", "cpu"]
