"""The plan before the run (romae.compendium.plan): measured memory, the micro-batch choice, every paper training, the CLI."""

import json
import math
import re
from pathlib import Path

import pytest
import torch

from romae.compendium import plan
from romae.runner import experiments

experiments.load()  # every experiment registers its paper trainings with the plan
from romae.runner import plantables
from romae.runner.bench import main as bench
from romae.config import RoMAEConfig, TrainConfig, size, to_json
from romae.data.catalog import Need

# the plan and promise tables the README used to hold live in docs/reproducing.md (issue 42)
README = Path(__file__).resolve().parents[1] / "docs" / "reproducing.md"


@pytest.fixture(scope="module")
def paper_plan():
    """The README's plan (one H100, 80 GiB, all precisions): cold about a minute, then cached on disk."""
    return plantables.readme_plan()


def _real_saved_bytes(t: plan.Training, micro: int, bf16: bool) -> int:
    """The slow, obvious reference: a real forward on the CPU, its saved tensors' storages summed."""
    model = plan._model(to_json(t.shape_model), t.stage)
    params = {p.untyped_storage().data_ptr() for p in [*model.parameters(), *model.buffers()]}
    seen = {}

    def pack(x):
        s = x.untyped_storage()
        if s.data_ptr() not in params:
            seen[s.data_ptr()] = max(seen.get(s.data_ptr(), 0), s.nbytes())
        return x

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x), \
            torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        model(**plan._batch(model.cfg, t.stage, micro, t.n_tokens))
    return sum(seen.values())


SMALL = RoMAEConfig(token_dim=3, n_axes=2, encoder=size("tiny-shallow"), decoder=size("tiny-shallow"), use_cls=True)


@pytest.mark.parametrize("stage", ["pretrain", "finetune"])
@pytest.mark.parametrize("bf16", [False, True])
def test_measured_line_extrapolates_to_a_real_forward(stage, bf16):
    model = SMALL if stage == "pretrain" else RoMAEConfig(**{**SMALL.to_dict(), "n_outputs": 5, "head": "cls"})
    t = plan.Training("small", stage, model, TrainConfig(batch_size=8), n_tokens=40, samples=8)
    key = (to_json(t.shape_model), stage, 40)
    for micro in (1, 2):  # fake tensors (no arithmetic) save what the CPU's real forward saves
        assert plan._saved_bytes(*key, micro, bf16) == _real_saved_bytes(t, micro, bf16)
    mem = plan.memory(t, bf16)
    real = _real_saved_bytes(t, 6, bf16)
    assert abs(mem.a + mem.b * 6 - real) <= 1e-6 * real  # the line through 1 and 2, checked at 6
    assert abs(plan.check(t, mem, 6, bf16)) <= 1e-6
    assert mem.b > 0 and mem.static == 4 * 4 * sum(p.numel() for p in plan._model(key[0], stage).parameters())


def test_pick_micro_batch():
    gib = plan.GIB
    mem = plan.Memory(static=2 * gib, a=0.5 * gib, b=0.1 * gib)  # 1.25 x (2.5 + 0.1 m) + 1.5 GiB
    assert plan.pick_micro_batch(48, mem, None) == (48, 1)  # no memory given: the whole batch
    assert plan.pick_micro_batch(48, mem, 100) == (48, 1)  # it fits
    micro, k = plan.pick_micro_batch(48, mem, 6.0)  # 1.25 x (2.5 + 0.1 m) + 1.5 <= 6 -> m <= 11
    assert (micro, k) == (8, 6) and micro * k == 48  # the largest divisor of 48 that fits (12 does not)
    assert mem.peak_gib(8) <= 6.0 < mem.peak_gib(12)
    assert plan.pick_micro_batch(48, mem, 4.0) == (None, 0)  # not even one sample fits


def test_a_training_that_cannot_fit_is_reported():
    p = plan.plan("h100", 1, 1.6, ("fp32",), only=["16"], checked=False)  # 1.5 GiB of it is the CUDA context
    assert p["rows"] and all(r["precision"]["fp32"]["micro"] is None for r in p["rows"])
    assert p["totals"]["16"]["fp32"] is None and p["totals"]["all"]["fp32"] is None
    text = plan.table(p)
    assert text.count("does not fit") == len(p["rows"]) and re.search(r"all\s+total\s+-$", text, re.M)


def test_steps_and_batches_follow_the_modules_configs():
    one, eight = plan.paper_trainings("10", 1), plan.paper_trainings("10", 8)
    assert [t.name for t in one] == [t.name for t in eight]
    for a, b in zip(one, eight):  # the global batch is split over 8 processes: same steps, 1/8 of the batch each
        assert a.train.batch_size == 1024 and b.train.batch_size == 128 and a.steps == b.steps
    pre = one[0]
    assert pre.steps == 200 * math.ceil(100_000 / 1024) and pre.tokens == 196  # Table 10; (224 / 16)^2, no [CLS]
    uea = {t.name: t for t in plan.paper_trainings("12")}
    assert uea["uea:Epilepsy pre-training"].steps == 400 * math.ceil(137 / 64)  # Table 13: 400 epochs of batch 64
    assert uea["uea:Epilepsy fine-tuning"].runs == 6  # 3 seeds x (pre-trained, from scratch)
    assert plan.paper_trainings("00") == [] and plan.paper_trainings("03") == []


def test_uea_sizes_match_the_data_where_present():
    from romae.data import uea as U
    from romae.experiments import uea

    need = Need(("uea:BasicMotions",), "UEA BasicMotions")
    if not need.satisfied():
        pytest.skip(need.message())
    assert uea.stats(U.load("BasicMotions"), uea.config("paper", ["BasicMotions"])) == uea.PAPER_STATS["BasicMotions"]


def test_physionet_length_matches_the_data_where_present():
    from romae.data import physionet as P
    from romae.experiments import physionet

    need = Need(("physionet2012",), "PhysioNet 2012")
    if not need.satisfied():
        pytest.skip(need.message())
    df = P.records(progress=False)
    train, _ = P.split(df.record_id)
    sizes = df[df.record_id.isin(train)].groupby("record_id").size()
    assert (len(sizes), int(sizes.max())) == (physionet.PAPER_TRAIN_RECORDS, physionet.PAPER_MAX_TOKENS)


def test_time_model():
    t = plan.paper_trainings("15")[0]  # the Spiral: 14 blocks of narrow matrices, launch-bound on a GPU
    fp32, bf16 = (plan.step_seconds(t, "h100", p, 1, graphed=False) for p in ("fp32", "bf16"))
    assert plan.blocks(t) == t.model.encoder.depth + t.model.decoder.depth == 14
    assert 0.02 < fp32 < bf16 < 0.05  # as measured on the H200 (31 and 44 ms): autocast's casts cost more than BF16 saves
    assert plan.step_seconds(t, "a100", "fp32", 1, graphed=False) > fp32
    per_micro = plan.blocks(t) * plan.OVERHEAD["block"]["fp32"] + plan.OVERHEAD["micro"]
    assert plan.step_seconds(t, "h100", "fp32", 4) == pytest.approx(fp32 + 3 * per_micro)  # micro-batches: eager
    # replayed from CUDA graphs (the default where it applies): the launches go, each kernel still costs the GPU
    assert plan.graphable(t, 1) == "" and plan.graphable(t, 4) == "micro-batches"
    graphed = plan.step_seconds(t, "h100", "fp32", 1)
    assert graphed == plan.step_seconds(t, "h100", "fp32", 1, graphed=True) and fp32 / 10 < graphed < fp32 / 4
    big = next(x for x in plan.paper_trainings("10") if x.stage == "pretrain")  # 1.5e13 FLOP a step: BF16 pays
    assert plan.step_seconds(big, "h100", "bf16", 1) < plan.step_seconds(big, "h100", "fp32", 1) / 3
    assert plan.step_seconds(big, "h100", "fp32", 1) > 0.9 * plan.step_seconds(big, "h100", "fp32", 1, graphed=False)
    assert plan.step_seconds(t, "cpu", "bf16", 1) is None  # the reference CPU model is FP32 only


def test_cpu_time_model_against_the_readme_measurement():
    """The CPU plan (romae.compendium.cost's model x CPU_FACTOR) against the paper trainings' steps that `romae.runner.promise`
    measured on the reference CPU (the promise table in docs/reproducing.md): calibrated, not merely plausible."""
    from romae.compendium import cost
    from romae.runner import promise

    block = README.read_text().split(promise.README_BEGIN)[1].split(promise.README_END)[0]
    rows = re.findall(r"^\| (\d\d) \| (.+?) \| fp32 \| cpu \| [\d,]+ x 1(?: \(ran \d+\))? \| [^|]* \| "
                      r"[\d.e+]+ / ([\d.e+]+) \|", block, flags=re.M)
    assert len(rows) >= 30, "the promise table lost its rows"
    by_name = {(nb, t.name): t for nb in sorted({r[0] for r in rows}) for t in plan.paper_trainings(nb)}
    ratios = []
    for nb, name, measured in rows:
        t = by_name[(nb, name)]
        step = plan.step_seconds(t, "cpu", "fp32", 1)
        assert step == pytest.approx(plan.CPU_FACTOR * cost.reference_seconds(t.shape_model, t.train.batch_size,
                                                                                t.n_tokens, t.stage))
        ratios.append(float(measured) / step)
    ratios.sort()
    assert 0.85 < ratios[len(ratios) // 2] < 1.2, ratios  # the median step as planned
    assert sum(0.8 <= r <= 1.25 for r in ratios) >= 0.65 * len(ratios), ratios


def test_fit_memory(monkeypatch):
    t = next(x for x in plan.paper_trainings("10") if x.stage == "finetune")
    monkeypatch.setenv("ROMAE_GPU_MEMORY", "8")
    small = plan.fit_memory(t.train, t.model, t.n_tokens, "finetune", "paper")
    assert small.micro_batch is not None and 1024 % small.micro_batch == 0 and small.micro_batch < 1024
    assert plan.fit_memory(t.train, t.model, t.n_tokens, "finetune", "quick") is t.train  # paper profile only
    monkeypatch.setenv("ROMAE_GPU_MEMORY", "1000")
    whole = plan.fit_memory(t.train, t.model, t.n_tokens, "finetune", "paper")  # the whole batch fits
    assert whole.micro_batch is None and whole.checkpoint_every is not None  # a checkpoint schedule all the same
    monkeypatch.delenv("ROMAE_GPU_MEMORY")
    monkeypatch.setenv("ROMAE_DEVICE", "cpu")
    cpu = plan.fit_memory(t.train, t.model, t.n_tokens, "finetune", "paper")  # no device memory known
    assert cpu.micro_batch is None and cpu.checkpoint_every == plan.checkpoint_steps(
        plan.Training("", "finetune", t.model, t.train, t.n_tokens, samples=1), device="cpu")


def test_every_paper_training_fits_80_gb(paper_plan):
    rows = paper_plan["rows"]
    assert {r["notebook"] for r in rows} == set(experiments.EXPERIMENTS)
    assert len(rows) == sum(len(plan.paper_trainings(nb)) for nb in experiments.EXPERIMENTS)
    for r in rows:
        for p, x in r["precision"].items():
            assert x["micro"] is not None and x["peak_gib"] <= 80, (r["name"], p)
            assert x["micro"] * x["k"] == r["batch"]  # equal micro-batches add up to the paper's batch
            assert x["check_error"] is None or abs(x["check_error"]) < 0.01, (r["name"], p, x["check_error"])
    assert any(x["k"] > 1 for r in rows for x in r["precision"].values())  # ELAsTiCC, Tiny ImageNet accumulate
    total = paper_plan["totals"]["all"]
    # reduced precision pays on the matrix-bound trainings (10, 13); on the H200 BF16's casts cost more than it
    # saves on the launch-bound ones, so all in all it is no faster than TF32
    assert total["fp32"] > max(total["tf32"], total["bf16"]) > min(total["tf32"], total["bf16"]) > 0


def test_readme_table_is_current(paper_plan):
    text = README.read_text()
    assert plantables.README_BEGIN in text, "docs/reproducing.md has no paper-profile plan section"
    block = text.split(plantables.README_BEGIN, 1)[1].split(plantables.README_END, 1)[0]
    assert block.strip() == plantables.readme_block(paper_plan).strip(), (
        "docs/reproducing.md's plan is stale: run `python -m romae.runner.bench plan --profile paper --device h100 "
        "--gpus 1 --gpu-memory 80 --markdown --readme docs/reproducing.md`")


def test_cli(tmp_path, capsys):
    out, readme = tmp_path / "plan.json", tmp_path / "README.md"
    readme.write_text(f"# x\n{plantables.README_BEGIN}\nold\n{plantables.README_END}\ntail\n")
    assert bench(["plan", "--profile", "paper", "--only", "14", "--gpu-memory", "80", "--precision", "bf16",
                  "--out", str(out), "--markdown", "--readme", str(readme)]) == 0
    printed = capsys.readouterr().out
    assert "Eager steps, calibrated on an NVIDIA H200" in printed and "NOT YET MEASURED on a GPU" in printed and "| 14 | pendulum, ours |" in printed
    saved = json.loads(out.read_text())
    assert [r["name"] for r in saved["rows"]] == ["pendulum, ours", "pendulum, authors' configuration"]
    assert list(saved["rows"][0]["precision"]) == ["bf16"]
    text = readme.read_text()
    assert "old" not in text and text.endswith(f"{plantables.README_END}\ntail\n") and "| 14 | pendulum, ours |" in text
    with pytest.raises(SystemExit):
        bench(["plan", "--only", "99"])
    assert "unknown notebooks ['99']" in capsys.readouterr().err
    plain = tmp_path / "plain.md"
    plain.write_text("no markers\n")
    with pytest.raises(ValueError, match="no <!-- plan:begin -->"):
        plantables.write_readme(plain, plan.plan(only=["14"], checked=False))


def test_pretrain_finetune_takes_the_planned_micro_batch(monkeypatch):
    from romae.compendium import kept
    from romae.train import ArrayDataset

    class Stop(Exception):
        pass

    seen = {}

    def fit_cached(name, model_cls, model_cfg, data, cfg, key, **kw):
        seen[name] = cfg
        if name.endswith("finetune"):
            raise Stop
        return dict(run_id="x", state_dict=None)

    monkeypatch.setattr(kept, "fit_cached", fit_cached)
    monkeypatch.setenv("ROMAE_GPU_MEMORY", "3")
    data = ArrayDataset(values=torch.zeros(8, 100, 3), positions=torch.zeros(8, 2, 100), labels=torch.zeros(8).long())
    big = TrainConfig(batch_size=4096)  # as if the paper's: 4,096 samples of 100 tokens do not fit in 3 GiB
    for profile, planned in (("paper", True), ("quick", False)):
        with pytest.raises(Stop):
            kept.pretrain_finetune_kept("t", data, data, SMALL, finetune=big, pretrain=big, n_outputs=2, seed=0, key={},
                                     profile=profile)
        for stage in ("pretrain", "finetune"):
            micro = seen[f"t_{stage}"].micro_batch
            assert (micro is not None and 4096 % micro == 0 and micro < 4096) if planned else micro is None


def test_show_prints_the_paper_profile_only(capsys, monkeypatch):
    monkeypatch.setenv("ROMAE_DEVICE", "cpu")
    plan.show("14", "smoke")
    assert capsys.readouterr().out == ""
    plan.show("14", "paper")
    out = capsys.readouterr().out
    assert "pendulum, ours" in out and "pendulum, authors' configuration" in out and "14   total" in out
    assert "reference" in out  # no GPU: the reference CPU's time


def test_show_leaves_the_count_to_an_experiment_that_counts_its_own(monkeypatch, tmp_path):
    """12's plan covers all of Table 6, of which only the data sets present run: its progress total and time left
    must not come from the plan (a run of BasicMotions alone read '1/93 ... about 40 h left')."""
    from romae.compendium import terminal

    monkeypatch.setenv("ROMAE_DEVICE", "cpu")
    monkeypatch.setenv(terminal.ECHO, str(tmp_path / "echo"))
    monkeypatch.setattr(terminal, "_state", dict(terminal._state, expected=None, planned_total=None))
    plan.show("14", "paper")
    assert terminal._state["expected"] == 40 and terminal._state["planned_total"] > 0  # 14: the plan counts
    monkeypatch.setattr(terminal, "_state", dict(terminal._state, expected=None, planned_total=None))
    plan.show("12", "paper")
    assert terminal._state["expected"] is None and terminal._state["planned_total"] is None
    assert "progress lines count those present" in (tmp_path / "echo").read_text()


# ---- the feed term (issue 31 item 6): the host's share of a step

def _feed_training(feed: str, batch: int = 512) -> plan.Training:
    from romae import RoMAEConfig, TrainConfig, size

    model = RoMAEConfig(token_dim=16 * 16 * 3 if feed == "images" else 2, n_axes=2, encoder=size("tiny-shallow"))
    return plan.Training("feed test", "pretrain", model, TrainConfig(epochs=1, batch_size=batch), n_tokens=196,
                         samples=batch * 4, feed=feed)


def test_feed_seconds_scale_with_the_batch_and_gpus_finish_images_themselves():
    assert plan.feed_seconds(_feed_training(""), "h100") == 0.0
    store = _feed_training("store")
    assert plan.feed_seconds(store, "h100") == pytest.approx(512 * plan.FEED_MEASURED["store"])
    assert plan.feed_seconds(_feed_training("store", 1024), "cpu") == pytest.approx(2 * plan.feed_seconds(store, "cpu"))
    images = _feed_training("images")
    assert plan._image_shape(images) == (224, 16)
    # a GPU gathers the uint8 images only (it augments and resizes them on the device); the CPU does it all
    assert plan.feed_seconds(images, "h100") == pytest.approx(512 * plan.FEED_MEASURED["images-gather"])
    assert plan.feed_seconds(images, "cpu") > 100 * plan.feed_seconds(images, "h100")
    with pytest.raises(ValueError, match="Training.feed must be one of"):
        plan.feed_seconds(_feed_training("video"), "cpu")


def test_the_plan_adds_the_feed_on_the_cpu_and_overlaps_it_on_a_gpu(monkeypatch):
    """CPU: step + feed; GPU: the longer of the two (a thread builds the next batch while this one trains)."""
    t = _feed_training("store", 16384)
    monkeypatch.setattr(plan, "paper_trainings", lambda nb, gpus=1: [t])
    feed = plan.feed_seconds(t, "h100")
    for device in ("h100", "cpu"):
        p = plan.plan(device, 1, None, precisions=("fp32",), only=["13"], checked=False)
        x = p["rows"][0]["precision"]["fp32"]
        step = plan.step_seconds(t, device, "fp32", x["k"])
        expected = max(step, feed) if device == "h100" else step + feed
        assert x["hours"] == pytest.approx(t.runs * t.steps * expected / 3600)
        assert x["feed_seconds"] == pytest.approx(feed)
    assert "feed s" in plan.table(p)


def test_feed_measured_here_is_near_the_committed_measurement():
    """`--device this` measures the feed again: on any machine within 20x of the committed 2-core figures (a
    store batch builder made 10x slower, or a measurement of something else, fails)."""
    for kind, side, patch in (("store", 0, 0), ("images-gather", 224, 16)):
        here = plan._feed_here(kind, side, patch, 64)
        assert plan.FEED_MEASURED[kind] / 20 < here < 20 * plan.FEED_MEASURED[kind], (kind, here)


def test_the_readme_states_the_committed_plans_totals():
    # the README's hours of the whole paper profile are the committed plan's (`make plan` writes both)
    import json

    p = json.loads((README.parents[1] / "reports" / "plan" / "paper_h100.json").read_text())
    text = (README.parents[1] / "README.md").read_text()
    graphed = tuple(plan._hours(p["totals"]["all"][q]) for q in ("fp32", "tf32", "bf16"))
    eager = tuple(plan._hours(p["eager_totals"][q]) for q in ("fp32", "tf32", "bf16"))
    assert "puts it at {} h in FP32 ({} h TF32, {} h BF16) on one 80 GB H100 with its steps replayed".format(
        *graphed) in " ".join(text.split())
    assert "and {} h FP32 ({} h TF32, {} h BF16) with eager".format(*eager) in " ".join(text.split())
