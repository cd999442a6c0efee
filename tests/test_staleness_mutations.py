"""The staleness rule, tested by mutation: planted numeric changes stale what they feed, neutral edits stale nothing.

`romae.runner.stales.planted(edits)` copies the package, makes the edits and returns the consumers (each numbered
notebook's run, and a kept training through `fit_cached`) whose code record changes, by the rule of
`romae.compendium.staleness`. This module proves the rule both ways on that copy:

* `PLANTS`: small numeric changes (a factor 0.999 / 1.001, a seed + 1, a constant moved, an array rolled by one,
  an argument dropped), at least one in every library module that computes, in the compendium's `kept.py` (its
  trainings, evaluations and recipe), in a data loader and in an experiment's constant. Each must stale at least the consumers named in
  its `feeds` (those sure to run that code; the rule may stale more, as its closure over-approximates what runs).
  Changes that a numerics workload (`romae.compendium.workloads`) executes are seen through that workload's numbers,
  the others through the hash of their unit: both ways are covered. A plant with a `gap` (why the rule misses it
  today) is expected to fail (`xfail(strict=True)`), so that covering it is noticed.
* `NEUTRAL`: comments, docstrings, error / warning / assert messages reworded, reformatting, a private helper
  renamed, a function moved, imports reordered. Each must stale nothing.
* Messages count as neutral where they are made: in `raise`, `assert` (its message dropped), `warnings.warn`,
  `print`, and a call of an exception class (`RuntimeError(...)`, `masking.BadSample(...)`) returned to be raised
  later. A message built elsewhere (a helper that returns a string) is hashed as code: an edit of it stales.

`test_every_computing_library_module_has_a_plant` fails when a new library module that computes has no plant.
A case takes under a second (an edit above the library: the other files' units are normalised once for all cases,
`staleness.Tree.shape`) to about 8 s (a library edit: the copy's workloads run again, compared with the checkout's
on this CPU, `numerics.measure(like=)`); all of them run once, two at a time (the `staled` fixture), and the tests
read the results: 140 s cold on a 2-core Intel Xeon (AVX-512), 284 s before both.
"""

from __future__ import annotations

import pytest

from romae.compendium import staleness
from romae.runner import stales

FIT = "kept training (fit_cached)"


def nb(stem: str) -> str:
    """The consumer name of the numbered notebook starting with `stem` ('12' -> 'notebook 12_uea_classification')."""
    found = [name for name in stales.consumers() if name.startswith(f"notebook {stem}")]
    assert len(found) == 1, f"no single notebook {stem}: {found}"
    return found[0]


# ----------------------------------------------------------------------------- numeric plants

PLANTS = [
    # --- the eleven named plants
    # DropPath's pass-through branch (eval mode, or rate 0) scales its input by 0.999
    dict(name="model_droppath_eval_x0.999",
         edits=[("model.py", "        if self.rate == 0.0 or not self.training:\n            return x\n",
                 "        if self.rate == 0.0 or not self.training:\n            return x * 0.999\n")],
         feeds={nb("10"), nb("12"), nb("13"), FIT}),
    # load_encoder copies the encoder blocks but no longer the pre-trained [CLS] token
    dict(name="model_load_encoder_drops_cls",
         edits=[("model.py", 'prefixes = ("encoder.", "cls_token") + (("embed.",) if embedding else ())',
                 'prefixes = ("encoder.",) + (("embed.",) if embedding else ())')],
         feeds={nb("10"), nb("12"), nb("13"), FIT}),
    # interpolation: the reconstructed hidden values x1.001
    dict(name="model_reconstruct_x1.001",
         edits=[("model.py", "out[mask] = pred.reshape(-1, pred.shape[-1]).to(out.dtype)",
                 "out[mask] = (1.001 * pred).reshape(-1, pred.shape[-1]).to(out.dtype)")],
         feeds={nb("15")}),
    # validation loss averaged over samples instead of the count the loss averaged over (real hidden tokens)
    dict(name="engine_evaluate_per_sample",
         edits=[("engine.py",
                 "count = sums.new_tensor(len(idx)) if count is None else count.detach().to(sums)",
                 "count = sums.new_tensor(len(idx))")],
         feeds={nb("01"), FIT}),
    # MiniRocket's equal-length padding repeats half the last observed step
    dict(name="baselines_minirocket_pads_half_last_step",
         edits=[("baselines.py", "np.repeat(x[-1:], length - len(x), axis=0)",
                 "np.repeat(0.5 * x[-1:], length - len(x), axis=0)")],
         feeds={nb("12")}),
    # fit_cached initialises its model from seed + 1
    dict(name="kept_fit_cached_seed_plus_1",
         edits=[("compendium/kept.py", "torch.manual_seed(seed)  # model initialisation",
                 "torch.manual_seed(seed + 1)  # model initialisation")],
         feeds={FIT, nb("14")}),
    # fit_cached also copies the pre-trained patch embedding
    dict(name="kept_fit_cached_loads_embedding",
         edits=[("compendium/kept.py", "model.load_encoder(pretrained() if callable(pretrained) else pretrained)",
                 "model.load_encoder(pretrained() if callable(pretrained) else pretrained, embedding=True)")],
         feeds={FIT, nb("12"), nb("13")}),
    # interpolation's padded equal-count masks: the series' values x1.001
    dict(name="masking_pad_observed_scales_values",
         edits=[("masking.py", "return dict(values=torch.cat((values, values.new_zeros(B, P, C)), 1),",
                 "return dict(values=torch.cat((1.001 * values, values.new_zeros(B, P, C)), 1),")],
         feeds={nb("15")}),
    # the N-D absolute sin/cos encoding (pos_encoding="absolute_nd") x1.01
    dict(name="rope_absolute_nd_x1.01",
         edits=[("rope.py", "    return torch.cat(chunks, dim=-1)", "    return 1.01 * torch.cat(chunks, dim=-1)")],
         feeds={nb("10")}),
    # the recipe scores the test outputs rolled by one sample (each prediction against its neighbour's label)
    dict(name="recipe_scores_rolled_outputs",
         edits=[("recipe.py", "metrics={name_: float(fn(labels, outputs)) for",
                 "metrics={name_: float(fn(labels, outputs.roll(1, 0))) for")],
         feeds={nb("12"), nb("13")}),
    # GridDataset resizes (bilinear) without antialiasing
    dict(name="images_resize_without_antialias",
         edits=[("images.py", 'mode="bilinear", align_corners=False, antialias=True)',
                 'mode="bilinear", align_corners=False, antialias=False)')],
         feeds={nb("10")}),

    # --- one in every other computing library module
    # Kaldi's pre-emphasis 0.97 -> 0.969 (executed by the audio workload)
    dict(name="audio_fbank_preemphasis_x0.999",
         edits=[("audio.py", "frames = frames - preemphasis * prev", "frames = frames - 0.999 * preemphasis * prev")],
         feeds={nb("11")}),
    # from_sequences' fitted standard deviation x1.001 (executed by the builders workload)
    dict(name="builders_from_sequences_std_x1.001",
         edits=[("builders.py", "std = np.nanstd(obs, axis=0)", "std = 1.001 * np.nanstd(obs, axis=0)")],
         feeds={nb("12")}),
    # TokenDataset.labels: regression targets back in their own units, the mean moved (executed and read by the
    # builders workload: before it read `.labels`, this plant staled nothing)
    dict(name="builders_labels_own_units_mean_x1.001",
         edits=[("builders.py", "+ torch.as_tensor(t.mean).reshape(-1)).float()",
                 "+ 1.001 * torch.as_tensor(t.mean).reshape(-1)).float()")],
         feeds={nb("12")}),
    # a workload that reads less (the instrument changed, not the code): its id moves, what it vouched for stales
    dict(name="workloads_builders_reads_less",
         edits=[("compendium/workloads.py", "[a.labels, d.labels, e.labels, e.tensors[\"labels\"]]",
                 "[a.labels, d.labels]")],
         feeds={nb("12")}),
    # a checkpoint's saved weights x0.999 (what a resumed training continues from)
    dict(name="checkpoint_save_weights_x0.999",
         edits=[("checkpoint.py", 'state = {k: v.detach().to("cpu", copy=True).contiguous() for',
                 'state = {k: 0.999 * v.detach().to("cpu", copy=True).contiguous() for')],
         feeds={FIT}),
    # TrainConfig's default warm-up share 10 % -> 11 %
    dict(name="config_default_warmup_0.11",
         edits=[("config.py", "DEFAULT_WARMUP_FRACTION = 0.1 ", "DEFAULT_WARMUP_FRACTION = 0.11 ")],
         feeds={FIT, nb("14")}),
    # each global batch taken from the epoch's permutation rolled by one (executed by the train workload)
    dict(name="feeding_shard_rolled_by_one",
         edits=[("feeding.py", "g = perm[b * batch_size * n_proc : (b + 1) * batch_size * n_proc]",
                 "g = perm.roll(1)[b * batch_size * n_proc : (b + 1) * batch_size * n_proc]")],
         feeds={FIT}),
    # under CUDA graphs, the learning-rate tensor filled with lr x0.999: code that runs only on CUDA, so it stales
    # results computed there (`device`; on a CPU it stales nothing: NEUTRAL's graphs_* and test_device_records)
    dict(name="graphs_capturable_lr_x0.999", device="cuda",
         edits=[("graphs.py", "torch.tensor(float(lr), dtype=dtype, device=dev)",
                 "torch.tensor(float(lr) * 0.999, dtype=dtype, device=dev)")],
         feeds={FIT, nb("02"), nb("14")}),
    # a graph's replay counted twice, its warm-up one step longer: CUDA-only code (above)
    dict(name="graphs_replays_and_warmup", device="cuda",
         edits=[("graphs.py", "WARMUP = 3", "WARMUP = 4"),
                ("graphs.py", "self.replays += 1", "self.replays += 2")],
         feeds={FIT, nb("02"), nb("12")}),
    # the largest position a model takes: 2**53 -> 2**52
    dict(name="inputs_max_position_2_52",
         edits=[("inputs.py", "MAX_POSITION = 2.0 ** 53", "MAX_POSITION = 2.0 ** 52")],
         feeds={FIT, nb("13")}),
    # the CPU's float32 RMSNorm x0.999 (executed by the float32 model and train workloads)
    dict(name="kernels_rmsnorm_x0.999",
         edits=[("kernels.py", "        xn = x * rstd\n", "        xn = x * rstd * 0.999\n")],
         feeds={FIT, nb("12"), nb("13")}),
    # accuracy x0.999 (executed by the metrics workload)
    dict(name="metrics_accuracy_x0.999",
         edits=[("metrics.py", "return float(accuracy_score(*_classes(y_true, y_pred)))",
                 "return 0.999 * float(accuracy_score(*_classes(y_true, y_pred)))")],
         feeds={nb("12"), nb("13")}),
    # the cosine schedule's half 0.5 -> 0.4995 (executed by the train workload)
    dict(name="optim_cosine_x0.999",
         edits=[("optim.py", "return 0.5 * lr * (1.0 + math.cos(math.pi * progress))",
                 "return 0.4995 * lr * (1.0 + math.cos(math.pi * progress))")],
         feeds={FIT, nb("14")}),
    # a grid's patch coordinates x1.001 (executed by the model workload)
    dict(name="patching_grid_positions_x1.001",
         edits=[("patching.py", "axes = [torch.arange(g, dtype=torch.float32, device=device) for g in grid]",
                 "axes = [1.001 * torch.arange(g, dtype=torch.float32, device=device) for g in grid]")],
         feeds={nb("10"), nb("11")}),
    # RoPE's frequencies x1.001 (executed by the model workload)
    dict(name="rope_frequencies_x1.001",
         edits=[("rope.py", "theta = base ** (-2.0 * k / axis_dim)", "theta = 1.001 * base ** (-2.0 * k / axis_dim)")],
         feeds={FIT, nb("01"), nb("12")}),
    # a dry run's batch: three micro-batches a step instead of two
    dict(name="runtime_dry_batch_three_micro",
         edits=[("runtime.py", "return min(batch_size, 2 * micro), micro", "return min(batch_size, 3 * micro), micro")],
         feeds={FIT}),
    # float32 times are refused as merged from 2**23 instead of 2**24
    dict(name="sequence_checks_float32_threshold_2_23",
         edits=[("sequence_checks.py", "if top >= 2 ** 24 and n < len(given):",
                 "if top >= 2 ** 23 and n < len(given):")],
         feeds={nb("12")}),
    # a TokenStore's times x1.001 (ELAsTiCC's light curves)
    dict(name="store_batch_times_x1.001",
         edits=[("store.py", "pos.reshape(-1)[at] = (t - np.repeat(t[first], k)) * self.time_scale",
                 "pos.reshape(-1)[at] = (t - np.repeat(t[first], k)) * self.time_scale * 1.001")],
         feeds={nb("13")}),
    # fit seeds torch with seed + 1 (executed by the train workload)
    dict(name="train_seed_everything_plus_1",
         edits=[("train.py", "    torch.manual_seed(seed)  # also seeds every CUDA device",
                 "    torch.manual_seed(seed + 1)  # also seeds every CUDA device")],
         feeds={FIT, nb("14")}),
    # predict's regression outputs back in original units with std x1.001
    dict(name="train_original_units_std_x1.001",
         edits=[("train.py", "return (out.double() * std + mean).float()", "return (out.double() * std * 1.001 + mean).float()")],
         feeds={nb("12"), nb("13")}),

    # --- the compendium, the data loaders, the experiments
    # the training time a kept training reports x1.001 (`kept` itself computes no number: it keeps compute()'s)
    # the compendium's recipe (kept.pretrain_finetune_kept) trains and evaluates with seed + 1
    dict(name="compendium_recipe_seed_plus_1",
         edits=[("compendium/kept.py", "n_outputs=n_outputs, seed=seed, key=key, trainer=trainer",
                 "n_outputs=n_outputs, seed=seed + 1, key=key, trainer=trainer")],
         feeds={nb("12"), nb("13")}),
    # the spiral generator's clockwise radius constant 50 -> 50.05
    dict(name="data_spiral_radius_x1.001",
         edits=[("data/spiral.py", "r = a[:, None] + 50 * b[:, None] / z", "r = a[:, None] + 50.05 * b[:, None] / z")],
         feeds={nb("15")}),
    # the pendulum's friction 0.1 -> 0.1001
    dict(name="data_pendulum_friction_x1.001",
         edits=[("data/pendulum.py", "friction: float = 0.1  #", "friction: float = 0.1001  #")],
         feeds={nb("14")}),
    # ELAsTiCC's margin of a pre-training effect that matters 0.01 -> 0.011 (tiny_imagenet.py holds an equal MARGIN)
    dict(name="experiments_elasticc_margin",
         edits=[("experiments/elasticc.py", "MARGIN = 0.01  # macro-F1", "MARGIN = 0.011  # macro-F1")],
         feeds={nb("13")}, spares={nb("10")}),
    # Tiny ImageNet's margin 0.01 -> 0.011 (the twin of the one above)
    dict(name="experiments_tiny_imagenet_margin",
         edits=[("experiments/tiny_imagenet.py", "MARGIN = 0.01  # the smallest", "MARGIN = 0.011  # the smallest")],
         feeds={nb("10")}, spares={nb("13")}),
]


# ----------------------------------------------------------------------------- neutral edits

_HIDDEN_COUNT = '''def hidden_count(N: int, mask_ratio: float) -> int:
    """Tokens per sample that `random_mask` hides: ceil(N * mask_ratio), at most N - 1."""
    return min(math.ceil(N * mask_ratio), N - 1)


'''
_EQUALIZE_END = '    return {**batch, "values": values, "positions": positions, "pad_mask": pad, "mask": mask}\n'

NEUTRAL = [
    # code that runs only on CUDA (`romae.compendium.devices`), for results computed on a CPU: the graph machinery's
    # warm-up, its replays and the learning-rate tensor (the same edits stale CUDA results: PLANTS' graphs_*)
    dict(name="graphs_only_on_cuda_for_cpu_results",
         edits=[("graphs.py", "WARMUP = 3", "WARMUP = 4"),
                ("graphs.py", "torch.tensor(float(lr), dtype=dtype, device=dev)",
                 "torch.tensor(float(lr) * 0.999, dtype=dtype, device=dev)"),
                ("masking.py", "def take_checks() -> list:\n", "def take_checks() -> list:\n    _STATE.taken = True\n")]),
    # model.py
    dict(name="model_comment_in_droppath",
         edits=[("model.py", "        return x * keep / (1.0 - self.rate)\n",
                 "        # the kept samples are scaled up so the expectation is unchanged\n"
                 "        return x * keep / (1.0 - self.rate)\n")]),
    dict(name="model_error_message_reworded",
         edits=[("model.py", 'raise ValueError(f"empty batch: values has shape {tuple(values.shape)}")',
                 'raise ValueError(f"the batch is empty: values is {tuple(values.shape)}")')]),
    dict(name="engine_private_helper_renamed",
         edits=[("engine.py", "        _log_window(run, ep, lr)", "        _log_history_row(run, ep, lr)"),
                ("engine.py", "def _log_window(run: Run,", "def _log_history_row(run: Run,")]),
    dict(name="engine_save_call_reformatted",
         edits=[("engine.py", "    checkpoint.save(run.ckpt, run.accelerator, run.inner, train_state, mine,\n",
                 "    checkpoint.save(\n        run.ckpt, run.accelerator, run.inner,\n        train_state, mine,\n")]),
    # masking.py
    dict(name="masking_private_helper_renamed",
         edits=[("masking.py", "def _scoped(name: str, value):", "def _thread_scoped(name: str, value):"),
                ("masking.py", 'return _scoped("namer", rename)', 'return _thread_scoped("namer", rename)'),
                ("masking.py", 'return _scoped("hidden", int(hidden))', 'return _thread_scoped("hidden", int(hidden))'),
                ("masking.py", 'return _scoped("lengths", lengths)', 'return _thread_scoped("lengths", lengths)')]),
    dict(name="masking_function_moved_to_the_end",
         edits=[("masking.py", _HIDDEN_COUNT, ""),
                ("masking.py", _EQUALIZE_END, _EQUALIZE_END + "\n\n" + _HIDDEN_COUNT.rstrip("\n") + "\n")]),
    dict(name="train_warning_reworded",
         edits=[("train.py", 'warnings.warn(f"warm-up ({warmup} steps) is not shorter than the whole run',
                 'warnings.warn(f"warm-up ({warmup} steps) lasts as long as the whole run')]),
    dict(name="builders_error_message_reworded",
         edits=[("builders.py", "raise ValueError(f\"fill must be 'interpolate' or 'mean', got {fill!r}\")",
                 "raise ValueError(f\"fill is either 'interpolate' or 'mean', not {fill!r}\")")]),
    dict(name="optim_imports_reordered",
         edits=[("optim.py", "import math\nfrom functools import partial\n",
                 "from functools import partial\nimport math\n")]),
    # above the library
    dict(name="data_esc50_load_error_reworded",
         edits=[("data/esc50.py", "clips listed in esc50.csv are missing, e.g.",
                 "clips of esc50.csv are not on disk, for instance")]),
    dict(name="experiments_elasticc_comment_reworded",
         edits=[("experiments/elasticc.py", "MARGIN = 0.01  # macro-F1: the smallest effect of pre-training that matters",
                 "MARGIN = 0.01  # macro-F1: the least effect of pre-training worth a verdict")]),
    dict(name="experiments_tiny_imagenet_error_reworded",
         edits=[("experiments/tiny_imagenet.py", 'raise ValueError("seeds must name at least one seed")',
                 'raise ValueError("give at least one seed (seeds is empty)")')]),
    dict(name="experiments_pendulum_error_reworded",
         edits=[("experiments/pendulum.py", "raise ValueError(f\"head must be 'tokens' or 'cls', got {self.head!r}\")",
                 "raise ValueError(f\"head is 'tokens' or 'cls', not {self.head!r}\")")]),
    dict(name="compendium_report_docstring_reworded",
         edits=[("compendium/report.py", '"""Save a matplotlib figure as <folder>/figures/<name>.png (name = the paper '
                                         'artefact id;',
                 '"""Write a matplotlib figure to <folder>/figures/<name>.png (name: the paper\'s artefact id;')]),
    # messages of exceptions made to be raised later, and an assert message added (issue 51 marks them)
    dict(name="engine_returned_error_message_reworded",
         edits=[("engine.py", 'return RuntimeError(f"non-finite training loss {value} at step {step}; nothing was '
                              'saved for it")',
                 'return RuntimeError(f"the training loss is {value} at step {step}; nothing was saved for it")')]),
    dict(name="model_deferred_error_message_reworded",
         edits=[("model.py", 'return masking.BadSample(f"labels must be finite, found {v} for ",',
                 'return masking.BadSample(f"labels are to be finite, found {v} for ",')]),
    dict(name="compendium_measure_assert_message_added",
         edits=[("compendium/measure.py", "assert n_params == cfg.block_params()  #",
                 'assert n_params == cfg.block_params(), f"{name}: {n_params} parameters"  #')]),
    dict(name="compendium_kept_docstring_reworded",
         edits=[("compendium/kept.py", "Training time of a run from its history",
                 "How long a run trained, read from its history")]),
]

# ----------------------------------------------------------------------------- the tests

def _cases(table: list[dict]) -> list:
    """The entries of a table as pytest params; one with a `gap` (why the rule misses it today) expected to fail."""
    return [pytest.param(e, id=e["name"], marks=[pytest.mark.xfail(strict=True, reason=e["gap"])] if "gap" in e else [])
            for e in table]


@pytest.fixture(scope="module")
def staled() -> dict[str, dict]:
    """{name: what it stales} for every plant and neutral edit, two at a time: each runs the copy's workloads in a
    process of its own, so two keep both cores busy."""
    from concurrent.futures import ThreadPoolExecutor

    stales.consumers()  # this checkout's records, computed once before the threads share them
    cases = PLANTS + NEUTRAL
    with ThreadPoolExecutor(2) as pool:
        return dict(zip([c["name"] for c in cases],
                        pool.map(lambda c: stales.planted(c["edits"], device=c.get("device", "cpu")), cases)))


@pytest.mark.parametrize("plant", _cases(PLANTS))
def test_every_plant_stales_what_it_feeds(plant, staled):
    got = staled[plant["name"]]
    print(f"PLANT {plant['name']}: stales {sorted(got)}")
    missing = plant["feeds"] - set(got)
    assert not missing, f"{plant['name']} does not stale {sorted(missing)}; it stales {sorted(got)}"
    wrongly = plant.get("spares", set()) & set(got)
    assert not wrongly, f"{plant['name']} stales {sorted(wrongly)}, which never run it: {[got[w] for w in wrongly]}"


@pytest.mark.parametrize("edit", _cases(NEUTRAL))
def test_neutral_edits_stale_nothing(edit, staled):
    got = staled[edit["name"]]
    print(f"NEUTRAL {edit['name']}: stales {sorted(got)}")
    assert got == {}, f"{edit['name']} changes no number but stales: " + "; ".join(
        f"{name}: {why[:4]}" for name, why in sorted(got.items()))


def test_every_computing_library_module_has_a_plant():
    planted = {rel for p in PLANTS for rel, _, _ in p["edits"]}
    needed = ["compendium/kept.py"]
    for path in sorted(staleness.PACKAGE.glob("*.py")):
        rel = path.name
        if rel == "__init__.py" or not staleness.computes(rel):
            continue
        if staleness.Module(rel, path.read_text()).units:
            needed.append(rel)
    assert len(needed) >= 20, f"too few library modules found: {needed}"
    missing = [rel for rel in needed if rel not in planted]
    assert not missing, f"no numeric plant in {missing}: add one to PLANTS"


def test_the_table_has_enough():
    assert len(PLANTS) >= 25 and len(NEUTRAL) >= 15
    assert len({rel for n in NEUTRAL for rel, _, _ in n["edits"]}) >= 8
    names = [p["name"] for p in PLANTS + NEUTRAL]
    assert len(names) == len(set(names)), "duplicate names"


def test_every_edit_applies_once():
    """Each edit's `old` occurs exactly once in its file (after the edits before it): a table that no longer
    matches the code fails here, quickly, rather than inside `planted`."""
    for entry in PLANTS + NEUTRAL:
        texts: dict[str, str] = {}
        for rel, old, new in entry["edits"]:
            text = texts.get(rel) or (staleness.PACKAGE / rel).read_text()
            assert text.count(old) == 1, f"{entry['name']}: {rel}: {old!r} occurs {text.count(old)} times"
            assert old != new, f"{entry['name']}: an edit that changes nothing"
            texts[rel] = text.replace(old, new)
