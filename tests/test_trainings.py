"""The committed record of finished trainings (romae.compendium.trainings): a paper run interrupted at any point and
resumed on a fresh clone (an empty results cache, no checkpoints, only what was committed) trains only what is
missing and reports what an uninterrupted run reports; weights are kept only when small; an entry of old code
is stale; `make reproduce` opens the record for the paper profile only."""

from __future__ import annotations

import json

import pytest
import torch

from romae import RoMAEConfig, TrainConfig, size
from romae.compendium import trainings
from romae import train as T
from romae.compendium.cache import cached
from romae.compendium import kept as K
from romae.compendium.kept import kept
from romae.compendium.kept import pretrain_finetune_kept as pretrain_finetune
from romae.train import ArrayDataset

TOKEN_DIM = 3
SEEDS = (0, 1)


def _model() -> RoMAEConfig:
    enc = size("tiny-shallow", d_model=12, n_heads=2, d_ff=24)
    return RoMAEConfig(token_dim=TOKEN_DIM, n_axes=1, encoder=enc, decoder=enc)


def _data(n: int, seed: int) -> ArrayDataset:
    g = torch.Generator().manual_seed(seed)
    return ArrayDataset(values=torch.randn(n, 6, TOKEN_DIM, generator=g),
                        positions=torch.rand(n, 1, 6, generator=g) * 10, labels=torch.randint(0, 2, (n,), generator=g))


def _tc() -> TrainConfig:
    return TrainConfig(epochs=2, batch_size=4, lr=1e-2, warmup_steps=0, log_every=1, progress=False)


def _paper_run(cache_dir) -> dict:
    """A tiny 'paper run': per seed a pre-training, its fine-tuning and one from scratch (6 trainings)."""
    train, test = _data(12, 0), _data(8, 1)
    out = {}
    for seed in SEEDS:
        for variant, pre in (("pre-trained", _tc()), ("scratch", None)):
            res = pretrain_finetune("tiny", train, test, _model(), finetune=_tc(), pretrain=pre, n_outputs=2, seed=seed,
                                    key={"data": "tiny"}, cache_dir=cache_dir)
            out[(seed, variant)] = (res["metrics"], res["outputs"])
    return out


@pytest.fixture
def counted(monkeypatch):
    """fit, counted; `stop_after`: the call that raises KeyboardInterrupt (an interrupted run)."""
    calls = {"n": 0, "stop_after": None}
    real = T.fit

    def fit(*a, **kw):
        calls["n"] += 1
        if calls["stop_after"] is not None and calls["n"] > calls["stop_after"]:
            raise KeyboardInterrupt("interrupted by the test")
        return real(*a, **kw)

    monkeypatch.setattr(T, "fit", fit)
    monkeypatch.setattr(K, "fit", fit)  # what fit_cached calls
    return calls


@pytest.mark.parametrize("weights_kept", [True, False])
@pytest.mark.parametrize("stop_after", [1, 4])
def test_an_interrupted_paper_run_resumed_on_a_fresh_clone_trains_only_what_is_missing(
        tmp_path, monkeypatch, counted, weights_kept, stop_after):
    monkeypatch.setattr(trainings, "DEFAULT", tmp_path / "repo-record")  # the repository's own record: empty
    reference = _paper_run(tmp_path / "reference-cache")  # uninterrupted, no record open
    assert counted["n"] == 6
    record = tmp_path / "reports" / "trainings"
    monkeypatch.setenv(trainings.ENV, str(record))
    if not weights_kept:
        monkeypatch.setattr(trainings, "WEIGHTS_LIMIT", 0)  # as for UEA's 20 MB models: no weights committed
    counted.update(n=0, stop_after=stop_after)
    with pytest.raises(KeyboardInterrupt):
        _paper_run(tmp_path / "machine-1")  # the first piece: stops inside training number stop_after + 1
    done = len(list(record.glob("tiny_*pretrain*.json"))) + len(list(record.glob("tiny_*finetune*.json")))
    assert done == stop_after
    # a fresh clone: nothing of machine 1 but the committed record
    counted.update(n=0, stop_after=None)
    resumed = _paper_run(tmp_path / "machine-2")
    # what was missing: the trainings after the interruption, and, where weights are not committed, a finished
    # pre-training whose fine-tuning had not finished (seed 0's, when stopped after 1; seed 1's when after 4)
    retrained = 0 if weights_kept else 1
    assert counted["n"] == 6 - stop_after + retrained
    for k, (metrics, outputs) in reference.items():
        assert resumed[k][0] == metrics and torch.equal(resumed[k][1], outputs), k  # the same numbers
    # a third machine: everything is in the record, nothing trains, not even without weights
    counted["n"] = 0
    again = _paper_run(tmp_path / "machine-3")
    assert counted["n"] == 0
    assert {k: v[0] for k, v in again.items()} == {k: v[0] for k, v in reference.items()}


def test_kept_entries_say_what_ran_and_weights_only_when_small(tmp_path, monkeypatch):
    monkeypatch.setenv(trainings.ENV, str(tmp_path / "rec"))
    big = {"state_dict": {"w": torch.zeros(trainings.WEIGHTS_LIMIT // 4 + 1)}, "history": [{"step": 1, "loss": 0.5}],
           "steps": 1}
    small = {"state_dict": {"w": torch.zeros(4)}, "steps": 1}
    kept("big", {"a": 1}, lambda: big, cache_dir=tmp_path / "c", planned=10.0)
    kept("small", {"a": 1}, lambda: small, cache_dir=tmp_path / "c")
    cached("not_a_training", {"a": 1}, lambda: small, cache_dir=tmp_path / "c")  # not kept: never recorded
    metas = {m["key"].split("-")[0]: m for m in trainings.entries(tmp_path / "rec")}
    assert set(metas) == {"big", "small"}
    assert metas["big"]["dropped"] == ["state_dict"] and metas["small"]["dropped"] == []
    facts = metas["big"]["facts"]
    assert facts["wall_seconds"] >= 0 and facts["peak_host_mb"] > 0 and metas["big"]["planned_seconds"] == 10.0
    assert metas["big"]["summary"] == {"steps": 1} and metas["big"]["device"].startswith("cpu")
    assert metas["big"]["bytes"] < trainings.WEIGHTS_LIMIT
    # the big one is found, without weights, unless weights are required
    key = metas["big"]["key"]
    assert trainings.load(key)[0] and "state_dict" not in trainings.load(key)[1]
    assert trainings.load(key, require=("state_dict",)) == (False, None)
    assert torch.equal(trainings.load(metas["small"]["key"], require=("state_dict",))[1]["state_dict"]["w"],
                       torch.zeros(4))


def test_an_entry_of_other_numbers_is_stale_and_one_edited_by_hand_is_damaged(tmp_path, monkeypatch):
    from romae.compendium import staleness

    monkeypatch.setenv(trainings.ENV, str(tmp_path / "rec"))
    kept("run", {"a": 1}, lambda: {"steps": 1}, cache_dir=tmp_path / "c", roots=["kernels.py:RMSNorm"])
    twin = next((tmp_path / "rec").glob("*.json"))
    t = trainings.table(tmp_path / "rec")
    assert list(t.state) == ["current"], t
    meta = json.loads(twin.read_text())
    assert "model" in meta["code_of"]["numbers"] and "kernels.py:RMSNorm.forward" in meta["code_of"]["units"]
    # as if the model's arithmetic had changed since: the model workload's numbers are no longer the code's
    now = json.loads(json.dumps(meta["code_of"]))
    now["numbers"]["model"] = "other numbers"
    monkeypatch.setattr(staleness, "check", lambda rec, tree=None: staleness.explain(rec, now))
    assert trainings.table(tmp_path / "rec").state.iloc[0] == \
        f"stale: numbers of the model workload: {meta['code_of']['numbers']['model']} -> other numbers"
    monkeypatch.undo()
    monkeypatch.setenv(trainings.ENV, str(tmp_path / "rec"))
    twin.write_text(json.dumps(dict(meta, config={"a": 2})))  # edited by hand: no longer what its key says
    assert trainings.table(tmp_path / "rec").state.iloc[0].startswith("damaged")
    assert trainings.load(twin.stem) == (False, None)  # never used
    twin.write_text(json.dumps({k: v for k, v in meta.items() if k != "code_of"}))  # nothing says what code made it
    assert trainings.table(tmp_path / "rec").state.iloc[0].startswith("stale: its code_of is not a record")
    assert trainings.next_run(tmp_path / "rec", twin.stem).action == trainings.SET_ASIDE
    g = trainings.grouped(trainings.table(tmp_path / "rec"))
    assert g.loc[0, "trainings"] == 1 and g.loc[0, "stale"] == 1


def test_wall_time_is_set_against_the_plan_per_device(tmp_path, monkeypatch):
    monkeypatch.setenv(trainings.ENV, str(tmp_path / "rec"))
    for seed, (device, wall) in enumerate([("cpu", 30.0), ("cpu", 50.0), ("NVIDIA H200", 2.0)]):
        kept("run", {"seed": seed}, lambda: {"steps": 1}, cache_dir=tmp_path / "c", planned=20.0)
        twin = max((tmp_path / "rec").glob("*.json"), key=lambda p: json.loads(p.read_text())["config"]["seed"])
        meta = json.loads(twin.read_text())
        twin.write_text(json.dumps(dict(meta, device=device, facts=dict(meta["facts"], wall_seconds=wall))))
    g = trainings.grouped(trainings.table(tmp_path / "rec")).set_index("device")
    assert g.loc["cpu", "trainings"] == 2 and g.loc["cpu", "ratio"] == 2.0  # 80 s against 2 x 20 s planned
    assert g.loc["NVIDIA H200", "trainings"] == 1 and g.loc["NVIDIA H200", "ratio"] == 0.1


def test_no_record_is_written_unless_one_is_open(tmp_path, monkeypatch):
    monkeypatch.delenv(trainings.ENV, raising=False)
    monkeypatch.setattr(trainings, "DEFAULT", tmp_path / "repo-record")
    kept("run", {"a": 1}, lambda: {"steps": 1}, cache_dir=tmp_path / "c")
    assert not (tmp_path / "repo-record").exists()


def test_the_paper_and_quick_profiles_open_their_records(tmp_path, monkeypatch):
    """The kernel of a paper run sees $ROMAE_TRAININGS = <reports>/trainings; a quick run's its own
    <reports>/trainings/quick (so a fresh clone re-publishes it without retraining)."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from romae.runner import reproduce

    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    nb = new_notebook(cells=[new_code_cell('profile: str = "smoke"\nreports_dir: str = ""',
                                           metadata={"tags": ["parameters"]}),
                             new_code_cell("import os\nfrom pathlib import Path\n"
                                           "Path(reports_dir, 'seen.txt').write_text(os.environ.get('ROMAE_TRAININGS', '-'))")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, nbs / "01_env.ipynb")
    monkeypatch.delenv(trainings.ENV, raising=False)
    for profile in ("paper", "quick"):
        reports = tmp_path / profile
        assert reproduce.main(["--profile", profile, "--device", "cpu", "--notebooks", str(nbs),
                               "--reports", str(reports)]) == 0
        seen = next(reports.rglob("seen.txt")).read_text()
        # published files show the reports folder as [reports] (reproduce.redactor)
        assert seen == ("[reports]/trainings" if profile == "paper" else "[reports]/trainings/quick")
    assert trainings.ENV not in __import__("os").environ  # put back for the rest of this process


def test_a_paper_run_sets_the_quick_run_it_replaces_aside(tmp_path):
    """Paper leads the front page; the quick run it replaces stays reachable in reports/quick/ (files and page)."""
    from romae.runner import reproduce

    reports, stage = tmp_path / "reports", tmp_path / "stage"
    for root, profile, text in ((reports, "quick", "quick"), (stage, "paper", "paper")):
        for rel in ("executed/14_x.ipynb", "figures/fig_x.png", "tables/t.csv"):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        (root / "provenance").mkdir(parents=True, exist_ok=True)
        (root / "provenance" / "14_x.json").write_text(json.dumps({"profile": profile}))
    (reports / "figures" / "other.png").write_text("another notebook's")
    (reports / "html").mkdir()
    (reports / "html" / "14_x.html").write_text("quick page")
    reproduce.publish(stage, reports, "14_x", "paper")
    for rel in ("executed/14_x.ipynb", "figures/fig_x.png", "tables/t.csv"):
        assert (reports / rel).read_text() == "paper" and (reports / "quick" / rel).read_text() == "quick", rel
    assert json.loads((reports / "quick" / "provenance" / "14_x.json").read_text())["profile"] == "quick"
    assert (reports / "quick" / "14_x.html").read_text() == "quick page" and not (reports / "html" / "14_x.html").exists()
    assert (reports / "figures" / "other.png").read_text() == "another notebook's"
    # a second paper run replaces the paper run; the quick one set aside stays as it was
    stage.mkdir(exist_ok=True)
    (stage / "executed").mkdir(exist_ok=True)
    (stage / "executed" / "14_x.ipynb").write_text("paper 2")
    (stage / "provenance").mkdir(exist_ok=True)
    (stage / "provenance" / "14_x.json").write_text(json.dumps({"profile": "paper"}))
    reproduce.publish(stage, reports, "14_x", "paper")
    assert (reports / "executed" / "14_x.ipynb").read_text() == "paper 2"
    assert (reports / "quick" / "executed" / "14_x.ipynb").read_text() == "quick"
    # a page set aside (here: a quick run again, then a paper run) loads MathJax from reports/html/ (it is not
    # rendered again: it keeps its mtime)
    from romae.runner.pages import MATHJAX_URL
    (reports / "html" / "14_x.html").write_text(f'<script src="{MATHJAX_URL}"> </script>quick page')
    (reports / "provenance" / "14_x.json").write_text(json.dumps({"profile": "quick"}))
    for rel in ("executed/14_x.ipynb", "provenance/14_x.json"):
        (stage / rel).parent.mkdir(parents=True, exist_ok=True)
    (stage / "executed" / "14_x.ipynb").write_text("paper")
    (stage / "provenance" / "14_x.json").write_text(json.dumps({"profile": "paper"}))
    reproduce.publish(stage, reports, "14_x", "paper")
    assert (reports / "quick" / "14_x.html").read_text() == f'<script src="../html/{MATHJAX_URL}"> </script>quick page'


def test_the_plan_estimate_counts_samples_of_a_dict_of_tensors_as_of_a_dataset():
    from romae.compendium import plan

    ds = _data(40, 0)
    cfg, tc = _model(), _tc()
    as_dataset = plan.training_seconds("pretrain", cfg, tc, ds, device="cpu")
    assert plan.training_seconds("pretrain", cfg, tc, dict(ds.tensors), device="cpu") == as_dataset
    assert plan.training_seconds("pretrain", cfg, tc, n_tokens=6, samples=40, device="cpu") == as_dataset
    t = plan.Training("", "pretrain", cfg, tc, 6, 40)
    assert t.steps == 2 * 10 and as_dataset == pytest.approx(t.steps * plan.step_seconds(t, "cpu", "fp32", 1))


def test_portable_keeps_plain_results_as_they_are():
    import collections

    import pandas as pd

    Pair = collections.namedtuple("Pair", "a b")
    frame = pd.DataFrame({"name": ["x", None], "v": [1.0, 2.0]}, index=pd.Index(["r1", "r2"]))
    result = {"trials": frame, "runs": [{"history": frame}], "pair": Pair(1, "b"), "t": (torch.ones(2), 3)}
    kept = trainings.portable(result)
    assert list(kept) == list(result) and kept["pair"] == Pair(1, "b") and torch.equal(kept["t"][0], torch.ones(2))
    for got in (kept["trials"], kept["runs"][0]["history"]):
        pd.testing.assert_frame_equal(got, frame, check_dtype=False, check_index_type=False,
                                      check_column_type=False)  # where pyarrow is, the storage moves
        assert got.name.isna().tolist() == [False, True]


def test_a_record_written_where_pyarrow_stores_strings_loads_without_it():
    """The H200's image had pyarrow, so pandas kept (and pickled) the strings of notebook 15's evaluation in it; the
    record must not need pyarrow to be read."""
    import io

    import pandas as pd

    pytest.importorskip("pyarrow")
    frame = pd.DataFrame({"decoder": pd.array(["tiny", "tiny-shallow"], dtype=pd.StringDtype("pyarrow")),
                          "rmse": [0.04, 0.05]})
    series = pd.Series(["a"], dtype=pd.StringDtype("pyarrow"), index=pd.Index(["i"], dtype=pd.StringDtype("pyarrow")))
    before, after = io.BytesIO(), io.BytesIO()
    torch.save({"trials": frame, "s": series}, before)
    torch.save(trainings.compact({"trials": frame, "s": series})[0], after)
    assert b"pyarrow" in before.getvalue() and b"pyarrow" not in after.getvalue()
    after.seek(0)
    got = torch.load(after, weights_only=False)
    assert got["trials"].decoder.tolist() == ["tiny", "tiny-shallow"] and got["s"].index.tolist() == ["i"]


def test_rows_name_the_device_their_kept_trainings_ran_on(tmp_path, monkeypatch):
    """A notebook that publishes on this CPU what a GPU trained (notebook 01's Table 1 on the H200) says so in
    its rows' device column, so the front page never reads 'paper scale, CPU' for it."""
    from romae.compendium import report

    monkeypatch.setattr(trainings, "_DEVICES", {})
    here = report.device_label("cpu")
    assert report._device_column().startswith(f"{here}; ")  # nothing kept read: this device only
    from romae.compendium import staleness
    from romae.compendium.cache import key_of

    made_of = {"roots": [], "units": {}, "numbers": {}}  # the record of its code, and the code id it hashes to
    code = staleness.code_id(made_of)
    name = key_of("k", {}, code)  # an entry's name is what its config and code hash to
    trainings.save(name, {"x": torch.ones(1)}, {"config": {}, "code": code, "code_of": made_of}, folder=tmp_path)
    assert trainings.devices() == [here]  # written here: still this device only
    assert report._device_column().startswith(f"{here}; ")
    twin = tmp_path / f"{name}.json"  # the same entry as if a GPU had written it
    twin.write_text(json.dumps(dict(json.loads(twin.read_text()), device="NVIDIA H200")))
    monkeypatch.setenv(trainings.ENV, str(tmp_path))
    assert trainings.load(name)[0]
    gpu = "NVIDIA H200 (torch 2.13.0+cpu, CUDA none)"  # another device: its stack from the twin (issue 43)
    assert trainings.devices() == [here, gpu]
    column = report._device_column()
    assert column.startswith(f"trained on {here}, {gpu}; published on {here}; ")
    from romae.runner.claims import on_cpu

    assert on_cpu(f"{here}; torch") and not on_cpu(column)
    intel = "cpu (Intel(R) Xeon(R) Processor, 2 threads)"  # a processor name with parentheses of its own
    assert on_cpu(f"{intel}; torch 2.13.0+cpu") and on_cpu(f"trained on cpu (AMD EPYC, 2 threads), {intel}; "
                                                          f"published on {intel}; torch")
    assert not on_cpu(f"trained on NVIDIA H200, {intel}; published on {intel}; torch")
    monkeypatch.setattr(trainings, "_DEVICES", {})
    assert trainings.load(name)[0] and report._device_column().startswith(f"trained on {gpu}; published on {here}")
    kept("t", {"a": 1}, lambda: 1, cache_dir=tmp_path / "cache")  # a training that runs here
    assert trainings.devices() == [gpu, here]
    monkeypatch.setattr(trainings, "_DEVICES", {})
    kept("t", {"a": 1}, lambda: 1 / 0, cache_dir=tmp_path / "cache")  # from this machine's cache
    assert trainings.devices() == [here]


def test_a_results_cache_entry_names_the_device_its_training_ran_on(tmp_path, monkeypatch):
    """A training's results-cache entry records its device: copied from a GPU's cache into this machine's, it is
    read as the GPU's (the rows then say 'trained on NVIDIA H200'); an entry written before devices were recorded,
    and a result that is not a training, count as this machine's."""
    from romae.compendium import report

    here = report.device_label("cpu")
    folder = tmp_path / "cache"
    monkeypatch.setattr(trainings, "_DEVICES", {})
    assert kept("t", {"a": 1}, lambda: 1, cache_dir=folder) == 1
    twin = next(folder.glob("t-*.json"))
    assert json.loads(twin.read_text())["device"] == here and trainings.devices() == [here]
    twin.write_text(json.dumps(dict(json.loads(twin.read_text()), device="NVIDIA H200")))  # as the GPU wrote it
    monkeypatch.setattr(trainings, "_DEVICES", {})
    assert kept("t", {"a": 1}, lambda: 1 / 0, cache_dir=folder) == 1
    assert trainings.devices() == ["NVIDIA H200"]
    twin.write_text(json.dumps({k: v for k, v in json.loads(twin.read_text()).items() if k != "device"}))
    monkeypatch.setattr(trainings, "_DEVICES", {})
    assert kept("t", {"a": 1}, lambda: 1 / 0, cache_dir=folder) == 1
    assert trainings.devices() == [here]  # an older entry: this machine's
    monkeypatch.setattr(trainings, "_DEVICES", {})
    assert cached("e", {"a": 1}, lambda: 2, cache_dir=folder) == 2  # not a training: no device recorded
    assert "device" not in json.loads(next(folder.glob("e-*.json")).read_text()) and trainings.devices() == []
