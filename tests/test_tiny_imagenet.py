"""Tiny ImageNet: the archive reader, the image token builder (romae.images) and the Table 2 experiment."""

import io
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from romae.compendium import report
from romae.data import catalog
from romae.data import tiny_imagenet as ti
from romae.experiments import tiny_imagenet as E
from romae.images import GridDataset, from_images, rand_augment

WNIDS = ["n02", "n01", "n03"]  # deliberately unsorted in wnids.txt


def _jpeg(rng, size=16, mode="RGB") -> bytes:
    shape = (size, size, 3) if mode == "RGB" else (size, size)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8), mode).save(buf, "JPEG", quality=95)
    return buf.getvalue()


def make_archive(path: Path, per_class=4, val_per_class=2, size=16, prefix="tiny-imagenet-200/", odd=None) -> Path:
    """A small zip of the official layout; `odd` = (member, bytes) to plant a bad file."""
    rng = np.random.default_rng(0)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(prefix + "wnids.txt", "\n".join(WNIDS) + "\n")
        z.writestr(prefix + "words.txt", "n01\tgoldfish, Carassius auratus\nn02\tsalamander\nn03\tbullfrog\n")
        for w in WNIDS:
            for k in range(per_class):
                z.writestr(f"{prefix}train/{w}/images/{w}_{k}.JPEG", _jpeg(rng, size, "L" if k == 1 else "RGB"))
            z.writestr(f"{prefix}train/{w}/{w}_boxes.txt", "")
        ann = []
        for i in range(val_per_class * len(WNIDS)):
            z.writestr(f"{prefix}val/images/val_{i}.JPEG", _jpeg(rng, size))
            ann.append(f"val_{i}.JPEG\t{WNIDS[i % 3]}\t0\t0\t1\t1")
        z.writestr(prefix + "val/val_annotations.txt", "\n".join(ann) + "\n")
        if odd:
            z.writestr(prefix + odd[0], odd[1])
    return path


@pytest.fixture
def archive(tmp_path):
    return make_archive(tmp_path / "tiny.zip")


def test_read_zip_labels_sorted_wnids_and_grayscale(archive):
    d = ti.read_zip(archive, "train", progress=False)
    assert d["classes"] == sorted(WNIDS) and d["names"] == ["goldfish", "salamander", "bullfrog"]
    assert d["images"].shape == (12, 3, 16, 16) and d["images"].dtype == np.uint8
    assert np.bincount(d["labels"]).tolist() == [4, 4, 4]
    # a file of class n02 gets label 1 (its index among the sorted ids), whatever wnids.txt's order
    i = d["files"].index("train/n02/images/n02_0.JPEG")
    assert d["labels"][i] == 1
    gray = d["images"][d["files"].index("train/n01/images/n01_1.JPEG")]  # an "L" JPEG -> 3 equal channels
    assert (gray[0] == gray[1]).all() and (gray[1] == gray[2]).all()
    v = ti.read_zip(archive, "val", progress=False)
    assert v["files"][:3] == ["val/images/val_0.JPEG", "val/images/val_1.JPEG", "val/images/val_2.JPEG"]
    assert v["labels"][:3].tolist() == [1, 0, 2]  # n02, n01, n03 as annotated


def test_read_zip_errors_name_the_problem(tmp_path, archive):
    with pytest.raises(ValueError, match="unknown split 'test'"):
        ti.read_zip(archive, "test")
    odd = make_archive(tmp_path / "odd.zip", odd=("train/n01/images/n01_9.JPEG", _jpeg(np.random.default_rng(1), 8)))
    with pytest.raises(ValueError, match="n01_9.JPEG .* 8x8 px"):
        ti.read_zip(odd, "train", progress=False)
    broken = make_archive(tmp_path / "broken.zip", odd=("train/n01/images/n01_7.JPEG", b"not a jpeg"))
    with pytest.raises(ValueError, match="cannot decode image train/n01/images/n01_7.JPEG"):
        ti.read_zip(broken, "train", progress=False)
    (tmp_path / "plain.zip").write_bytes(b"no zip")
    with pytest.raises(ValueError, match="not a zip"):
        ti.read_zip(tmp_path / "plain.zip")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as z:
        z.writestr("x.txt", "")
    with pytest.raises(ValueError, match="no wnids.txt"):
        ti.read_zip(tmp_path / "other.zip")


def test_load_caches_and_refuses_a_changed_known_file(tmp_path, archive, monkeypatch):
    monkeypatch.setattr(ti, "CACHE", tmp_path / "cache")
    a = ti.load("train", source=archive, progress=False)
    b = ti.load("train", source=archive, progress=False)  # from the cache: a memory map
    assert isinstance(b["images"], np.memmap) and np.array_equal(a["images"], b["images"])
    assert b["classes"] == a["classes"] and b["resolution"] == 16 and b["source"] == "other"
    root = tmp_path / "data"
    (root / "tiny_imagenet").mkdir(parents=True)
    fake = root / "tiny_imagenet" / ti.SUBSET
    fake.write_bytes(archive.read_bytes())  # the subset's name, other bytes
    with pytest.raises(ValueError, match="checksum mismatch .*" + ti.SUBSET):
        ti.load("train", root=root, progress=False)


def test_missing_archive_names_the_url_and_switch(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"tiny-imagenet-200.zip.*cs231n.stanford.edu.*download=True"):
        ti.load("train", root=tmp_path)
    with pytest.raises(FileNotFoundError, match="not found"):
        ti.find(tmp_path, tmp_path / "nowhere.zip")
    ok, message = E.find(E.config("smoke"), tmp_path)
    assert not ok and "download=True" in message and "make data NAMES=tiny_imagenet" in message
    with pytest.raises(FileNotFoundError, match="make data NAMES=tiny_imagenet"):
        E.run("smoke", data_root=tmp_path)


def test_auto_prefers_the_official_archive(tmp_path):
    folder = tmp_path / "tiny_imagenet"
    folder.mkdir()
    (folder / ti.SUBSET).write_bytes(b"")
    assert ti.find(tmp_path) == folder / ti.SUBSET
    with pytest.raises(FileNotFoundError, match="download=True"):
        ti.find(tmp_path, "official")
    (folder / ti.OFFICIAL).write_bytes(b"")
    assert ti.find(tmp_path) == folder / ti.OFFICIAL and ti.find(tmp_path, "subset") == folder / ti.SUBSET


def test_official_archive_is_checked_by_md5(tmp_path, archive):
    folder = tmp_path / "tiny_imagenet"
    folder.mkdir()
    (folder / ti.OFFICIAL).write_bytes(archive.read_bytes())
    with pytest.raises(ValueError, match="expected MD5 " + ti.OFFICIAL_MD5):
        ti.load("train", root=tmp_path, source="official")


@pytest.mark.skipif(bool(catalog.unavailable("tiny_imagenet-subset")), reason=catalog.unavailable("tiny_imagenet-subset"))
def test_shared_subset():
    v = ti.load("val", progress=False)
    assert v["images"].shape == (10000, 3, 32, 32) and len(v["classes"]) == 200
    assert np.bincount(v["labels"], minlength=200).tolist() == [50] * 200
    assert v["source"] == "subset" and v["resolution"] == 32


# ------------------------------------------------------------------------------ romae.images

def test_tokens_follow_patchify_layout_and_round_trip():
    x = torch.randint(0, 256, (3, 3, 8, 12), dtype=torch.uint8)
    d = from_images(x, [0, 1, 2], patch_size=4)
    b = d.batch(torch.arange(3))
    assert b["values"].shape == (3, 6, 48) and b["positions"].shape == (3, 2, 6)
    assert b["positions"][0].T.tolist() == [[r, c] for r in range(2) for c in range(3)]  # (row, column)
    norm = (x.float() / 255 - d.mean[:, None, None]) / d.std[:, None, None]
    # token 4 = row 1, column 1; inside a token (height offset, width offset, channel), channel fastest
    ref = norm[1, :, 4:8, 4:8].permute(1, 2, 0).reshape(-1)
    torch.testing.assert_close(b["values"][1, 4], ref)
    torch.testing.assert_close(d.to_images(b["values"]), x.float() / 255, atol=1e-6, rtol=0)
    # channels-last input and a grayscale stack give the same kind of dataset
    assert from_images(x.permute(0, 2, 3, 1).numpy(), patch_size=4).batch([0])["values"].shape == (1, 6, 48)
    assert from_images(x[:, 0], patch_size=(2, 4)).token_dim == 8


def test_image_builder_refuses_bad_inputs():
    x = torch.zeros(2, 3, 8, 8, dtype=torch.uint8)
    with pytest.raises(ValueError, match=r"patch_size \(3, 3\) does not divide the image size \(8, 8\)"):
        from_images(x, patch_size=3)
    with pytest.raises(TypeError, match="uint8"):
        from_images(x.float(), patch_size=4)
    with pytest.raises(ValueError, match="3 labels for 2 grids"):
        from_images(x, [0, 1, 2], patch_size=4)
    with pytest.raises(ValueError, match="one value per channel"):
        from_images(x, patch_size=4, mean=(0.5,), std=(0.2, 0.2))
    with pytest.raises(ValueError, match="std must be positive"):
        GridDataset(x, patch_size=4, mean=(0, 0, 0), std=(1, 0, 1))
    with pytest.raises(ValueError, match="patch_size must be a positive int"):
        from_images(x, patch_size=(4, 0))
    with pytest.raises(ValueError, match="non-empty"):
        from_images(x[:0], patch_size=4)


def test_augmented_view_shares_storage_and_resize():
    x = torch.randint(0, 256, (16, 3, 16, 16), dtype=torch.uint8)
    d = from_images(x, torch.arange(16) % 2, patch_size=8)
    aug = d.with_augment(rand_augment(2, 9, group=4))
    assert aug.grids is d.grids and d.augment is None
    torch.manual_seed(0)
    a1 = aug.batch(torch.arange(16))["values"]
    torch.manual_seed(0)
    a2 = aug.batch(torch.arange(16))["values"]
    torch.testing.assert_close(a1, a2)  # drawn from torch's global generator: reproducible under a seed
    assert not torch.allclose(a1, d.batch(torch.arange(16))["values"])
    imgs = aug.images(torch.arange(16)) * d.std[:, None, None] + d.mean[:, None, None]
    assert imgs.min() >= -1e-6 and imgs.max() <= 1 + 1e-6  # augmented pixels stay in [0, 1]
    big = from_images(x, patch_size=16, size=32)
    assert big.grid == (2, 2) and big.batch([0, 1])["values"].shape == (2, 4, 768)


# ------------------------------------------------------------------------------ the experiment

def test_smoke_run_records_every_variant_and_reconstructs(tmp_path, archive):
    res = E.run("smoke", source=str(archive), reports_dir=tmp_path / "reports", cache_dir=tmp_path / "cache",
                variants=tuple(E.VARIANTS))
    assert res["found"] and set(res["per_seed"].setting) == set(E.VARIANTS)
    assert res["per_seed"][["accuracy", "macro_f1"]].apply(lambda c: c.between(0, 1)).all().all()
    import pandas as pd

    rows = pd.read_csv(tmp_path / "reports" / "results.csv")
    assert len(rows) == 2 * len(E.VARIANTS) and set(rows.metric) == {"accuracy", "macro_f1"}
    assert rows.note.str.contains("16 px").all() and not rows.note.str.contains("reduced").any()
    # the facts behind "reduced", from the run and the paper profile, not from words in the note
    sc = json.loads(rows.scale.iloc[0])
    assert sc == dict(dataset=["Tiny ImageNet", "Tiny ImageNet"], data=[len(res["data"]["train"]), 100_000],
                      resolution=["16 px", "64 px"], model=["RoMAE-tiny-shallow", "RoMAE-small"],
                      epochs=["1 + 1", "200 + 15"], seeds=[1, None])
    assert all(report.qualifiers(c, "smoke") == ["reduced"] for c in rows.scale)
    # the paper's two comparisons, each in its rows' notes; one seed resolves nothing
    comp = res["comparisons"]
    assert set(comp.comparison) == {"RoPE vs absolute", "without vs with [CLS]"} and len(comp) == 4
    assert (comp.verdict == "not resolved at this scale (1 seed)").all()
    rope = rows[(rows.setting == "RoPE, [CLS]") & (rows.metric == "accuracy")].note.iloc[0]
    assert "RoPE vs absolute" in rope and "without vs with [CLS]" in rope and "not resolved at this scale" in rope
    assert len(E.training_losses([res["results"][("RoPE, [CLS]", 0)]])) == 2  # pre-training and fine-tuning
    import matplotlib.pyplot as plt

    fig = E.plot_variants(res)
    f1 = fig.axes[1]
    assert "smoke profile, reduced" in f1.get_title()
    assert any(t.get_text().startswith("paper (Table 2") for t in f1.get_legend().get_texts())
    plt.close(fig)
    table = res["table"].set_index("variant")
    assert table.loc["RoPE, [CLS]", "paper F-score (Table 2)"] == 0.475  # read from paper_values.csv
    # the no-[CLS] variant has no [CLS] in pre-training either; its classifier uses the mean head
    m = E.pretrained_model(res, "RoPE, no [CLS] (mean head)", 0)
    assert m.cls_token is None and res["results"][("RoPE, no [CLS] (mean head)", 0)]["config"].head == "mean"
    r = E.reconstruct(E.pretrained_model(res, "RoPE, [CLS]", 0), res["data"]["test"], [0, 1])
    hidden = r["mask"]
    assert hidden.sum(1).tolist() == [3, 3]  # ceil(0.75 * 4 tokens of 8x8 in a 16-px image)
    orig, pasted = (res["data"]["test"].to_tokens(r[k]) for k in ("original", "pasted"))
    torch.testing.assert_close(pasted[~hidden], orig[~hidden])  # visible patches are the original's
    assert torch.isnan(res["data"]["test"].to_tokens(r["prediction"])[~hidden]).all()
    again = E.run("smoke", source=str(archive), reports_dir=tmp_path / "reports", cache_dir=tmp_path / "cache",
                  variants=tuple(E.VARIANTS))  # from the cache: the same numbers
    pd.testing.assert_frame_equal(again["per_seed"].drop(columns=["pretrain_seconds", "finetune_seconds"]),
                                  res["per_seed"].drop(columns=["pretrain_seconds", "finetune_seconds"]))


def test_profiles_follow_table10():
    p = E.config("paper")
    pre, ft = p.pretrain_config(100_000), p.finetune_config(100_000)
    assert (pre.lr, pre.betas, pre.weight_decay, pre.warmup_steps, pre.grad_clip, pre.epochs) == \
        (2e-4, (0.9, 0.95), 0.05, 2000, 1.0, 200)
    assert (ft.lr, ft.betas, ft.warmup_steps, ft.epochs, pre.batch_size) == (1e-3, (0.9, 0.999), 500, 15, 1024)
    assert E.config("paper", processes=8).pretrain_config(100_000).batch_size == 128
    m = p.model_config("absolute sin/cos, [CLS]", 768)
    assert (m.pos_encoding, m.use_cls, m.normalize_targets, m.encoder.d_model, m.decoder.d_model,
            m.decoder.depth) == ("absolute", True, True, 432, 432, 2)
    with pytest.raises(ValueError, match="unknown variants"):
        E.config("quick", variants=("RoPE",))


def test_comparisons_are_paired_over_seeds():
    """report.difference per Table 2 pair: a consistent gap is resolved, a tiny one is equal within the margin."""
    import pandas as pd

    rows = []
    for seed, (a, b, c) in enumerate([(0.30, 0.20, 0.301), (0.32, 0.21, 0.319), (0.31, 0.215, 0.311)]):
        rows += [dict(setting="RoPE, [CLS]", seed=seed, accuracy=a, macro_f1=a),
                 dict(setting="absolute sin/cos, [CLS]", seed=seed, accuracy=b, macro_f1=b),
                 dict(setting="RoPE, no [CLS] (mean head)", seed=seed, accuracy=c, macro_f1=c)]
    comp = E.comparisons(pd.DataFrame(rows), "macro_f1").set_index("comparison")
    assert comp.loc["RoPE vs absolute", "verdict"] == "resolved: RoPE, [CLS] > absolute sin/cos, [CLS]"
    assert comp.loc["without vs with [CLS]", "verdict"] == "equal within +-0.01"
    assert comp.loc["RoPE vs absolute", "paper_difference"] == pytest.approx(0.475 - 0.479)
    assert E.comparisons(pd.DataFrame(rows)[lambda f: f.seed == 0], "accuracy").verdict.str.contains("1 seed").all()
