"""Any UEA dataset in `quick` fits about 15 minutes on 2 cores: the plan (seeds, caps, thinning) for
datasets of every shape, decided from the cost model (`romae.compendium.cost`), the same on every machine; the cost
model's FLOPs against torch's flop counter; thinning keeps times; found datasets that are not
classification are skipped, named ones are errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from romae import RoMAEConfig, RoMAEForPrediction, RoMAEForPreTraining, from_sequences, size
from romae.compendium import cost
from romae.runner.bench import _CPU_ATTENTION_FLOPS
from romae.experiments import uea as U

SHAPES = {  # name: stats as `U.stats` gives them
    "Tiny": dict(n_train=30, n_test=30, channels=2, classes=3, max_len=20, min_len=20),
    "ManyChannels": dict(n_train=267, n_test=173, channels=963, classes=7, max_len=101, min_len=101),
    "ManyClasses": dict(n_train=3315, n_test=3353, channels=11, classes=39, max_len=152, min_len=152),
    "VeryLong": dict(n_train=128, n_test=131, channels=6, classes=5, max_len=12589, min_len=12589),
    "Unequal": dict(n_train=270, n_test=370, channels=12, classes=9, max_len=21, min_len=5),
    "ManySeries": dict(n_train=25000, n_test=25000, channels=200, classes=10, max_len=27, min_len=1),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_quick_plans_any_dataset_into_the_budget(name):
    st = SHAPES[name]
    cfg = U.config("quick", [name])
    c, reductions, seconds = U.plan(cfg, name, st)
    assert seconds <= U.PLAN_MINUTES * 60 or any("still over" in r for r in reductions), (name, seconds, reductions)
    assert seconds == U.reference_seconds(c, name, st)
    assert c.from_scratch and len(c.seeds) >= 1  # pre-trained and from scratch are both reported
    sch = U.schedule(c, name, st)
    assert len(sch["finetune"]) >= 2 and sch["pretrain"] >= 1
    assert U.plan(cfg, name, st) == (c, reductions, seconds)  # deterministic: no timing enters the plan
    text = U.describe(name, st, c, reductions, seconds, "quick")
    assert f"{st['n_train']} train / {st['n_test']} test series" in text and "Estimated" in text
    if reductions:
        assert "reduced to fit about 15 min on 2 cores" in text


def test_plans_reduce_in_order_and_say_so():
    plans = {n: U.plan(U.config("quick", [n]), n, st) for n, st in SHAPES.items()}
    assert plans["Tiny"][1] == []  # fits as the profile is
    assert any("seeds" in r for r in plans["Unequal"][1])
    thinned = [r for r in plans["VeryLong"][1] if "thinned" in r]
    assert thinned and plans["VeryLong"][0].max_tokens in U.THIN  # 12,589 tokens per series cannot be trained here
    assert all(U.plan(U.config("quick", [n]), n, st)[0].max_tokens is None for n, st in SHAPES.items()
               if st["max_len"] <= 512 and n != "VeryLong")


def test_table6_and_the_paper_profile_are_never_planned():
    st = dict(SHAPES["ManyClasses"])
    for name in ("Epilepsy", "LSST"):
        cfg = U.config("quick", [name])
        assert U.plan(cfg, name, st)[:2] == (cfg, [])
    cfg = U.config("paper", ["ManyClasses"])
    assert U.plan(cfg, "ManyClasses", st)[:2] == (cfg, [])


def test_thinning_keeps_evenly_spread_steps_and_their_times():
    x = np.arange(40, dtype=float)[:, None].repeat(2, 1)
    x[[3, 4, 5]] = np.nan  # dropped steps stay dropped
    short = np.ones((5, 2))
    out = U.thin([x, short], 8)
    kept = np.flatnonzero(~np.isnan(out[0]).all(1))
    assert len(kept) == 8 and kept[0] == 0 and kept[-1] == 39 and not set(kept) & {3, 4, 5}
    assert np.array_equal(out[1], short)  # not longer than the cap: untouched
    d = from_sequences(out)
    assert d.tensors["positions"][0, 0, :8].tolist() == kept.tolist()  # positions are the true step indices


@pytest.mark.parametrize("stage", cost.STAGES)
def test_step_flops_match_torchs_flop_counter(stage):
    cfg = RoMAEConfig(token_dim=5, encoder=size("tiny-shallow", d_model=48, n_heads=2, d_ff=96),
                      decoder=size("tiny-shallow", d_model=24, n_heads=2, d_ff=48), use_cls=True, n_outputs=4)
    B, N = 4, 32
    batch = dict(values=torch.randn(B, N, 5), positions=torch.rand(B, 1, N) * 10)
    model = RoMAEForPreTraining(cfg) if stage == "pretrain" else RoMAEForPrediction(cfg)
    if stage == "finetune":
        batch["labels"] = torch.randint(0, 4, (B,))
    with FlopCounterMode(display=False, custom_mapping=_CPU_ATTENTION_FLOPS) as counter:
        if stage == "predict":
            with torch.no_grad():
                model.eval()(**batch)
        else:
            model(**batch)[1].backward()
    counted, ours = counter.get_total_flops(), cost.step_flops(cfg, B, N, stage)
    assert ours == pytest.approx(counted, rel=0.05), (stage, counted, ours)


def test_the_reference_time_model_is_fitted_and_positive():
    cfg = U.config("quick").model_config(6)
    small, large = (cost.reference_seconds(cfg, b, n, "pretrain") for b, n in ((8, 16), (64, 512)))
    assert 0 < cost.OVERHEAD["pretrain"] <= small < large
    with pytest.raises(ValueError, match="unknown stage"):
        cost.step_flops(cfg, 1, 1, "train")
    assert cost.minutes(30) == "30 s" and cost.minutes(720) == "12.0 min" and cost.minutes(9000) == "2.5 h"


def _ts(name: str, header: str, rows: list[str]) -> str:
    return f"@problemName {name}\n@timeStamps false\n@univariate true\n{header}\n@data\n" + "\n".join(rows) + "\n"


def test_found_datasets_that_cannot_run_are_skipped_named_ones_are_errors(tmp_path):
    rng = np.random.default_rng(0)
    for name, header, label in (("Toy", "@classLabel true a b", lambda i: "ab"[i % 2]),
                                ("Reg", "@targetLabel true", lambda i: f"{i * 0.5}")):
        folder = tmp_path / "uea" / name
        folder.mkdir(parents=True)
        for split in ("TRAIN", "TEST"):
            rows = [",".join(f"{v:.3f}" for v in rng.normal(size=12) + i % 2) + f":{label(i)}" for i in range(10)]
            (folder / f"{name}_{split}.ts").write_text(_ts(name, header, rows))
    logged = []
    res = U.run("smoke", data_root=tmp_path, reports_dir=tmp_path / "r", cache_dir=tmp_path / "c", log=logged.append)
    assert res["found"] == ["Toy"] and "no class labels" in res["skipped"]["Reg"]
    assert set(res["missing"]) == set(U.uea.TABLE6)  # Table 6's five are named by default, and missing here
    assert any(line.startswith("Toy: 10 train / 10 test series") for line in logged)
    assert any("on this device" in line for line in logged)
    with pytest.raises(ValueError, match="Reg has no class labels"):
        U.run("smoke", "Reg", data_root=tmp_path, reports_dir=tmp_path / "r", cache_dir=tmp_path / "c", log=logged.append)
