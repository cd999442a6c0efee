"""Ablation: the [MASK] token's initialisation, the authors' zeros against MAE's N(0, 0.02).

`RoMAEForPreTraining` starts its [MASK] token at zeros (the authors; the decoder tells hidden tokens apart
only through RoPE). The decoder's first RMSNorm (epsilon 1e-12) divides by sqrt(eps + mean(x^2)), so at
x = 0 its gradient is ~1e6 times the incoming one: the first step's gradient norm is dominated by the
[MASK] token, and AdamW's first update (about lr * sign(g) per element) takes the token from zero to a
vector that the norm then blows up to unit RMS. MAE (facebookresearch/mae, `models_mae.py`) draws its
mask token from N(0, 0.02) instead (`RoMAEConfig.mask_token_init="normal"`); the norm then sees a token
of ordinary size from the start.

What is compared: the quick settings of notebook 15 (Spiral and Synthetic interpolation, the
interpolation module's own profile configs) and of notebook 02's raw-t control (the frequency module's
quick config with `frequency.control_config`), each replaced with `mask_token_init="normal"` and nothing
else: same seeds, data, schedules, model sizes and position scales. The normal draw comes from a side
generator (see `RoMAEForPreTraining`), so every other initial weight and every later random draw equal
the zeros run's: the two runs differ in the [MASK] token only.

Where the zeros numbers come from:

* `smoke` and `paper`: a fresh run of each piece with `mask_token_init="zeros"`, the same code path.
* `quick` (to save CPU): the committed quick numbers of `reports/results.csv` (rows
  `table7_interpolation` and `fig3_frequency_retention` "... raw t (control)"), except one Synthetic seed
  (seed 0, the cheapest piece), which is trained fresh with zeros to show that the code still reproduces
  the committed run: its numbers are compared with the committed per-seed values (recovered exactly from
  the committed 2-seed mean and std: mean +- std / sqrt(2)), and the fresh seed-0 pair (zeros, normal)
  gets its own rows.

Mechanism (fresh for both inits in every profile): the model each run starts from (same seed, same
config) on its first training batch, with one fixed mask: the loss, the gradient norm before clipping
(total and of the [MASK] token alone), one optimiser step exactly as `fit` takes it (AdamW, the
schedule's first learning rate, clipping), and the loss on the same batch after it. The first steps of
each run are also trained with `fit` and logged every step (`fig_init_ablation_mask_token`).

Output: the table `init_ablation_mask_token` (experiment, setting, metric, zeros, normal, better, ratio
normal / zeros, zeros_source) and `record` rows under the experiment id `init_ablation_mask_token` with
the source experiments' setting and metric names and the init appended to the setting. Zeros numbers taken
from the committed results are not recorded again (they are not computed by this code).
"""

from __future__ import annotations

import dataclasses
import math
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from ..compendium import plan, report
from .. import runtime
from ..config import RoMAEConfig, TrainConfig, check_profile
from ..data import spiral as S
from ..data import synthetic as Y
from ..data.sines import sine_series
from ..masking import random_mask
from ..model import RoMAEForPreTraining
from ..compendium.report import REPORTS, difference, difference_text, learned, loss_flags, record, save_figure, save_table, scale
from ..train import ArrayDataset, _make_optimizer, fit, lr_at
from . import frequency, interpolation

EXPERIMENT = "init_ablation_mask_token"
INITS = ("zeros", "normal")
SOURCES = ("table7_interpolation", "fig3_frequency_retention")  # the experiments whose numbers are compared
CURVE_STEPS = {"smoke": 4, "quick": 60, "paper": 200}  # per-step logged first steps (the figure)
CHECK_SEED = 0  # quick: the Synthetic seed trained fresh with zeros, to check against the committed run
CONTROL = ", raw t (control)"  # the suffix of the raw-t control's settings in fig3_frequency_retention
TOLERANCE = 1e-6  # "reproduces": |fresh - committed| <= TOLERANCE
NOT_COMPARED = "not compared"  # the `better` of a row that is no error (a slope, a reference level)


# ----------------------------------------------------------------------------- the settings

def interpolation_profile(profile: str, init: str) -> interpolation.InterpolationProfile:
    """Notebook 15's profile with `init` for both benchmarks, nothing else changed."""
    prof = interpolation.config(profile)
    return dataclasses.replace(prof, spiral=dataclasses.replace(prof.spiral, mask_token_init=init),
                               synthetic=dataclasses.replace(prof.synthetic, mask_token_init=init))


def control_config(profile: str, init: str) -> frequency.FrequencyConfig:
    """Notebook 02's raw-t control (the profile's config at position_scale 1) with `init`."""
    return dataclasses.replace(frequency.control_config(frequency.config(profile)), mask_token_init=init)


def paper_trainings() -> list[plan.Training]:
    """Notebook 04's paper trainings (`romae.compendium.plan`): the three pieces with MAE's N(0, 0.02) [MASK]. Their zeros
    runs are notebooks 15's and 02's own paper runs (same cache key: trained once, counted there)."""
    c = control_config("paper", "normal")
    return interpolation.paper_trainings(interpolation_profile("paper", "normal"), ", normal [MASK]") + [
        dataclasses.replace(t, name="raw-t control, normal [MASK]", model=c.model_config(), train=c.train_config())
        for t in frequency.paper_trainings()]


@dataclasses.dataclass(frozen=True)
class Start:
    """Where one run starts: its model config, training config, training data and init seed."""

    name: str
    model: RoMAEConfig
    train: TrainConfig
    data: dict
    seed: int


def starts(profile: str, init: str) -> list[Start]:
    """The first model of each piece (Spiral, Synthetic's first seed, the raw-t control), built as the
    source modules build them (`run_spiral`, `run_synthetic`, `frequency.train_model`)."""
    prof = interpolation_profile(profile, init)
    sp, spd = prof.spiral, prof.spiral_data
    sp_data = interpolation.spiral_tensors(S.spirals("train", spd), sp.position_scale)
    sp_data.pop("mask")  # a fresh random mask per training item, as run_spiral
    sy, syd = prof.synthetic, prof.synthetic_data
    sy_data = interpolation.synthetic_tensors(Y.split("train", syd), sy.position_scale, syd.obs_min, syd.obs_max)
    c = control_config(profile, init)
    c_data = frequency.to_tensors(sine_series(c.n_train, c.train_seed, c.sines), c.position_scale)
    return [
        Start("Spiral", interpolation.model_config(sp, 2, 1 - spd.n_obs / spd.n_points),
              sp.train_config(sp.seeds[0]), sp_data, sp.seeds[0]),
        Start("Synthetic", interpolation.model_config(sy, 1), sy.train_config(sy.seeds[0]), sy_data, sy.seeds[0]),
        Start("raw-t control", c.model_config(), c.train_config(), c_data, c.seed),
    ]


# ----------------------------------------------------------------------------- the mechanism

def _first_batch(start: Start) -> dict:
    """The batch `fit` trains on first (epoch 0's permutation), with a mask fixed once (seed 0) where the
    model would draw a random one."""
    data = ArrayDataset(**start.data)
    perm = torch.randperm(len(data), generator=torch.Generator().manual_seed(start.train.seed))
    batch = data.batch(perm[: runtime.dry_count(start.train.batch_size, 8)])  # a dry run: at most 8 samples
    if "mask" not in batch:
        B, N = batch["values"].shape[:2]
        batch["mask"] = random_mask(B, N, start.model.mask_ratio, batch.get("pad_mask"),
                                    generator=torch.Generator().manual_seed(0))
    return batch


def first_step(start: Start) -> dict:
    """Loss, gradient norms and the loss after one optimiser step, on the run's first batch (see module doc)."""
    torch.manual_seed(start.seed)  # as fit_cached: the model the run starts from
    model = RoMAEForPreTraining(start.model).train()
    batch = _first_batch(start)
    cfg = start.train
    total = math.ceil(len(start.data["values"]) / cfg.batch_size) * cfg.epochs
    optimizer = _make_optimizer(model.parameters(), cfg)
    for group in optimizer.param_groups:
        group["lr"] = lr_at(0, total, cfg.warmup(total), cfg.lr)
    _, loss = model(**batch)
    loss.backward()
    params = [p for p in model.parameters() if p.grad is not None]
    total_norm = float(torch.nn.utils.get_total_norm([p.grad for p in params]))
    mask_norm = float(model.mask_token.grad.norm())
    rest_norm = float(torch.nn.utils.get_total_norm([p.grad for p in params if p is not model.mask_token]))
    if cfg.grad_clip:
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
    optimizer.step()
    with torch.no_grad():
        _, after = model(**batch)
    return dict(loss_step0=loss.item(), grad_norm_step1=total_norm, grad_norm_mask_token_step1=mask_norm,
                grad_norm_rest_step1=rest_norm, loss_after_1_step=after.item(), lr_step1=optimizer.param_groups[0]["lr"])


def first_steps(start: Start, steps: int) -> pd.DataFrame:
    """The run's first `steps` optimiser steps with `fit`, logged every step (loss, grad_norm before clipping)."""
    torch.manual_seed(start.seed)
    model = RoMAEForPreTraining(start.model)
    cfg = dataclasses.replace(start.train, log_every=1, progress=False)
    res = fit(model, ArrayDataset(**start.data), cfg, max_steps=steps, device="cpu")
    return res.frame()[["step", "loss", "grad_norm"]]


# ----------------------------------------------------------------------------- the runs

def _spiral_metrics(sp: dict) -> dict:
    trials = pd.concat([r["trials"] for r in sp["runs"]])
    return {("Spiral", m): float(trials[m].mean()) for m in ("rmse_clean", "rmse_noisy", "authors_formula_noisy")}


def _synthetic_metrics(sy: dict, protocols) -> tuple[dict, dict]:
    """-> (mean over seeds, {seed: per-seed}) of {(setting, metric): value}, as interpolation.run."""
    per_seed = {}
    for r in sy["runs"]:
        s = r["series"]
        per_seed[r["seed"]] = {(f"Synthetic, {p} observed", m): float(s.loc[s.protocol == p, m].mean())
                               for p in protocols for m in ("mse_noisy", "mse_clean")}
    keys = next(iter(per_seed.values())).keys()
    return {k: float(np.mean([v[k] for v in per_seed.values()])) for k in keys}, per_seed


def _control_metrics(ev: dict) -> dict:
    """As frequency._record_variant, for the control's suffix."""
    out = {}
    for setting, frame in (("1 mode", ev["one"]), ("2 modes", ev["two"])):
        for metric, col in (("time_mse_hidden_mean", "time_mse_noisy"), ("time_mse_hidden_clean_mean", "time_mse_clean"),
                            ("fft_mse_mean", "fft_mse"), ("fft_bin_mse_mean", "fft_bin_mse")):
            out[(setting + CONTROL, metric)] = float(frame[col].mean())
    slope, _ = frequency.linear_trend(ev["one"], "fft_mse")
    if np.isfinite(slope):
        out[("1 mode, f >= 9 Hz" + CONTROL, "fft_mse_slope_per_hz")] = float(slope)
    return out


def predict_zero_mse(cfg: frequency.FrequencyConfig) -> dict:
    """The time-domain MSE of predicting 0 at every hidden point (vs noisy values) on the control's test
    series: the level at which a model that has not learned sits."""
    out = {}
    n_one, pairs = len(cfg.test_freqs) * cfg.n_test_one, len(cfg.test_freqs) * (len(cfg.test_freqs) - 1) // 2
    for setting, series in (
            ("1 mode", sine_series(n_one, cfg.test_seed, cfg.sines,
                                   freqs=frequency.one_mode_freqs(cfg.test_freqs, cfg.n_test_one))),
            ("2 modes", sine_series(pairs * cfg.n_test_two, cfg.test_seed + 1, cfg.sines,
                                    freqs=frequency.two_mode_freqs(cfg.test_freqs, cfg.n_test_two)))):
        hidden = ~series["observed"]
        out[(setting + CONTROL, "time_mse_hidden_mean")] = float(
            ((series["values"] ** 2 * hidden).sum(1) / hidden.sum(1)).mean())
    return out


def train_pieces(profile: str, init: str, cache_dir=None, checkpoints: bool = False, synthetic_seeds=None,
                 pieces=("spiral", "synthetic", "control")) -> dict:
    """Train (cached) and evaluate the chosen pieces with `init` -> {metrics, per_seed, histories, seconds,
    models (the model configs trained)}.

    `synthetic_seeds` replaces the Synthetic seeds (quick: (CHECK_SEED,) for the zeros check); the
    per-seed training keys are unchanged by it.
    """
    prof = interpolation_profile(profile, init)
    if synthetic_seeds is not None:
        prof = dataclasses.replace(prof, synthetic=dataclasses.replace(prof.synthetic, seeds=tuple(synthetic_seeds)))
    metrics, per_seed, histories, seconds, models = {}, {}, {}, {}, {}
    if "spiral" in pieces:
        sp = interpolation.run_spiral(prof, cache_dir, checkpoints=checkpoints, profile=profile)
        metrics.update(_spiral_metrics(sp))
        histories["Spiral"], models["Spiral"] = [r["history"] for r in sp["runs"]], sp["model"]
        seconds["Spiral"] = sum(r["seconds"] for r in sp["runs"])
    if "synthetic" in pieces:
        sy = interpolation.run_synthetic(prof, cache_dir, checkpoints=checkpoints, profile=profile)
        mean, per_seed = _synthetic_metrics(sy, ("3-10",) + tuple(str(k) for k in prof.eval_n_obs))
        metrics.update(mean)
        histories["Synthetic"], models["Synthetic"] = [r["history"] for r in sy["runs"]], sy["model"]
        seconds["Synthetic"] = sum(r["seconds"] for r in sy["runs"])
    if "control" in pieces:
        c = control_config(profile, init)
        trained = frequency.train_model(c, cache_dir=cache_dir, checkpoints=checkpoints, profile=profile)
        ev = frequency.evaluate_config(c, trained, cache_dir=cache_dir)
        metrics.update(_control_metrics(ev))
        histories["raw-t control"], models["raw-t control"] = [pd.DataFrame(trained["history"])], c.model_config()
        seconds["raw-t control"] = trained["seconds"]
    return dict(metrics=metrics, per_seed=per_seed, histories=histories, seconds=seconds, models=models)


def committed_quick(path=None) -> dict:
    """{(source experiment, setting, metric): (value, std, n_seeds)} of the quick rows of the committed
    <repo>/reports/results.csv (never the ROMAE_REPORTS scratch folder)."""
    path = path or REPORTS / "results.csv"
    try:
        rows = pd.read_csv(path)
    except FileNotFoundError:
        return {}
    rows = rows[rows.experiment.isin(SOURCES) & (rows.profile == "quick")]
    return {(r.experiment, r.setting, r.metric): (float(r.ours), None if pd.isna(r.ours_std) else float(r.ours_std),
                                                  int(r.n_seeds)) for r in rows.itertuples()}


def committed_per_seed(value: float, std: float | None, n_seeds: int) -> tuple[float, ...]:
    """The two per-seed values behind a committed 2-seed mean and sample std: mean -+ std / sqrt(2)."""
    if n_seeds != 2 or std is None:
        return ()
    half = std / math.sqrt(2)
    return value - half, value + half


def _source(setting: str) -> str:
    return "fig3_frequency_retention" if setting.endswith(CONTROL) else "table7_interpolation"


def _better(metric: str, zeros: float, normal: float) -> str:
    if metric.endswith("slope_per_hz") or not (np.isfinite(zeros) and np.isfinite(normal)):
        return NOT_COMPARED
    if abs(zeros - normal) <= 1e-12 * max(abs(zeros), abs(normal), 1.0):
        return "tie"
    return "normal" if normal < zeros else "zeros"


def _piece(setting: str) -> str:
    """The piece a (source) setting belongs to: Spiral, Synthetic or raw-t control."""
    return "raw-t control" if setting.endswith(CONTROL) else "Synthetic" if setting.startswith("Synthetic") else "Spiral"


def _positions(position_scale: float) -> str:
    return "t" if position_scale == 1.0 else f"t x {position_scale:g}"


def piece_scale(profile: str, piece: str, seeds_run: int | None = None) -> dict:
    """A row's scale: the piece's training data, epochs, seeds, model and positions in `profile` against the
    `paper` profile of its source module (interpolation: Tables 19 / 20; the control: frequency.run_scale)."""
    if piece == "raw-t control":
        return frequency.run_scale(control_config(profile, "zeros"))
    prof, paper = interpolation.config(profile), interpolation.config("paper")
    if piece == "Spiral":
        run, prun, n, pn = prof.spiral, paper.spiral, prof.spiral_data.n_train, paper.spiral_data.n_train
    elif piece == "Synthetic":
        run, prun = prof.synthetic, paper.synthetic
        n, pn = prof.synthetic_data.sizes()["train"], paper.synthetic_data.sizes()["train"]
    else:
        raise ValueError(f"unknown piece {piece!r}")
    return scale(data=(n, pn), epochs=(run.epochs, prun.epochs),
                 seeds=(len(run.seeds) if seeds_run is None else seeds_run, len(prun.seeds)),
                 model=(f"encoder {run.encoder}, decoder {run.decoder}", f"encoder {prun.encoder}, decoder {prun.decoder}"),
                 positions=(_positions(run.position_scale), _positions(prun.position_scale)))


def _losses(histories) -> list[list[float]]:
    """The logged training losses of each run (history frames) of a piece."""
    return [report.loss_curve(h) for h in histories]


MARGIN = 0.05  # normal vs zeros: a difference below 5 % of the zeros error is taken not to matter


def _zeros_per_seed(res_runs: dict, committed: dict, fresh: bool) -> dict:
    """{seed: {(setting, metric): zeros value}} of Synthetic: the fresh runs', or (quick, committed zeros) the two
    per-seed values recovered from the committed 2-seed mean and std, seed CHECK_SEED taking the one closer
    to its fresh re-run and the other seed the other."""
    if fresh:
        return res_runs["zeros"]["per_seed"]
    normal_seeds = sorted(res_runs["normal"]["per_seed"])
    if len(normal_seeds) != 2 or CHECK_SEED not in normal_seeds:
        return {}
    other = next(s for s in normal_seeds if s != CHECK_SEED)
    out = {CHECK_SEED: {}, other: {}}
    for key, mine in res_runs["zeros"]["per_seed"][CHECK_SEED].items():
        pair = committed_per_seed(*committed[("table7_interpolation",) + key]) \
            if ("table7_interpolation",) + key in committed else ()
        if len(pair) == 2:
            near = min(pair, key=lambda v: abs(v - mine))
            out[CHECK_SEED][key], out[other][key] = near, pair[1] if near == pair[0] else pair[0]
    return out


def difference_table(res_runs: dict, zeros_per_seed: dict, zeros: dict) -> pd.DataFrame:
    """Normal minus zeros for every error metric of the three pieces, paired by seed (`report.difference`, margin
    MARGIN x the zeros mean): Synthetic over its seeds (`zeros_per_seed`), Spiral and the control over their one
    seed (`zeros`: {(setting, metric): the zeros value}; never resolved). Columns: setting, metric, diff, se, n,
    margin, verdict, text."""
    rows = []
    normal = res_runs["normal"]
    for (setting, metric), value in normal["metrics"].items():
        if metric.endswith("slope_per_hz"):
            continue  # not an error
        if _piece(setting) == "Synthetic":
            seeds = [s for s in sorted(normal["per_seed"]) if (setting, metric) in zeros_per_seed.get(s, {})]
            a = [normal["per_seed"][s][(setting, metric)] for s in seeds]
            b = [zeros_per_seed[s][(setting, metric)] for s in seeds]
        else:
            z = zeros.get((setting, metric), float("nan"))
            a, b = ([value], [z]) if np.isfinite(z) else ([], [])
        if not a:
            continue
        res = difference(a, b, MARGIN * max(abs(float(np.mean(b))), 1e-12), names=("normal", "zeros"))
        rows.append(dict(setting=setting, metric=metric, **res, text=difference_text(res)))
    return pd.DataFrame(rows, columns=["setting", "metric", "diff", "se", "n", "margin", "verdict", "text"])


# ----------------------------------------------------------------------------- the experiment

def run(profile: str = "smoke", reports_dir=None, cache_dir=None, checkpoints: bool = False,
        curve_steps: int | None = None, fresh_zeros: bool | None = None) -> dict:
    """Train both inits, compare, save the table and the figure, record the rows.

    `fresh_zeros` (default: True for smoke and paper, False for quick): train every zeros run here;
    False (quick only) takes the zeros numbers from the committed quick results and trains only Synthetic
    seed CHECK_SEED with zeros, to check that the code reproduces them. Returns {profile, table,
    mechanism (DataFrame), curves ({piece: {init: DataFrame}}), check (quick: the fresh zeros seed
    against the committed run, else None), runs ({init: train_pieces output}), fresh_zeros, seconds
    (wall-clock of the whole call)}. `checkpoints` (default off: nothing is written under <repo>/runs):
    see `interpolation.run`.
    """
    check_profile(profile)
    fresh = profile != "quick" if fresh_zeros is None else bool(fresh_zeros)
    if not fresh and profile != "quick":
        raise ValueError(f"committed zeros numbers exist for the quick profile only, not {profile!r}")
    t0 = time.perf_counter()
    steps = CURVE_STEPS[profile] if curve_steps is None else curve_steps

    # 1. the mechanism: first step and first steps, both inits fresh
    mech_rows, curves, started = [], {}, {}
    for init in INITS:
        for start in starts(profile, init):
            started[(init, start.name)] = start.model
            mech_rows.append(dict(piece=start.name, init=init, **first_step(start)))
            curves.setdefault(start.name, {})[init] = first_steps(start, steps)
    mechanism = pd.DataFrame(mech_rows)

    # 2. the runs
    runs = {"normal": train_pieces(profile, "normal", cache_dir, checkpoints)}
    if fresh:
        runs["zeros"] = train_pieces(profile, "zeros", cache_dir, checkpoints)
    else:
        runs["zeros"] = train_pieces(profile, "zeros", cache_dir, checkpoints, synthetic_seeds=(CHECK_SEED,),
                                     pieces=("synthetic",))
    committed = committed_quick() if profile == "quick" else {}
    check = _reproduction_check(runs["zeros"]["per_seed"][CHECK_SEED], committed) if profile == "quick" else None
    for init, r in runs.items():  # the mechanism's models are the ones the runs trained
        for piece, model in r["models"].items():
            if started[(init, piece)] != model:
                raise RuntimeError(f"{piece}, {init}: the mechanism's model config differs from the run's")

    # 3. the table
    rows = []
    for (setting, metric), normal in runs["normal"]["metrics"].items():
        src = _source(setting)
        old = committed.get((src, setting, metric))
        if fresh:
            zeros = runs["zeros"]["metrics"][(setting, metric)]
            how = f"fresh run ({profile}), same code path"
            if old is not None:
                how += f"; committed quick value {old[0]:.6g}"
        else:
            zeros = old[0] if old is not None else float("nan")
            how = (f"committed quick run (reports/results.csv, {old[2]} seed(s)), not re-run" if old is not None
                   else "committed quick row missing from reports/results.csv")
        if check is not None and (setting, metric) in check:
            c = check[(setting, metric)]
            how += (f"; fresh zeros seed {CHECK_SEED} {'reproduces' if c['reproduces'] else 'does NOT reproduce'}"
                    f" its committed per-seed value (|diff| {c['abs_diff']:.1e})")
        rows.append(dict(experiment=src, setting=setting, metric=metric, zeros=zeros, normal=normal, source=how))
    if not fresh:  # the fresh pair on the check seed: both inits trained here
        for key, zeros in runs["zeros"]["per_seed"][CHECK_SEED].items():
            rows.append(dict(experiment="table7_interpolation", setting=f"{key[0]}, seed {CHECK_SEED} only",
                             metric=key[1], zeros=zeros, normal=runs["normal"]["per_seed"][CHECK_SEED][key],
                             source=f"fresh run (quick), seed {CHECK_SEED}"))
    for (setting, metric), level in predict_zero_mse(control_config(profile, "normal")).items():
        rows.append(dict(experiment="fig3_frequency_retention", setting=setting,
                         metric=f"{metric} of predicting 0 (reference)", zeros=level, normal=level,
                         source="computed from the test series: the level of a model that has not learned"))
    for piece in mechanism.piece.unique():
        m = mechanism[mechanism.piece == piece].set_index("init")
        for metric in ("loss_step0", "grad_norm_step1", "grad_norm_mask_token_step1", "grad_norm_rest_step1",
                       "loss_after_1_step"):
            rows.append(dict(experiment="mechanism (first batch)", setting=f"{piece} ({profile} settings)",
                             metric=metric, zeros=float(m.loc["zeros", metric]), normal=float(m.loc["normal", metric]),
                             source="fresh, both inits"))
    table = pd.DataFrame(rows)
    table["better"] = [_better(r.metric, r.zeros, r.normal) if "reference" not in r.metric else NOT_COMPARED
                       for r in table.itertuples()]
    table["ratio"] = table.normal / table.zeros
    table = table[["experiment", "setting", "metric", "zeros", "normal", "better", "ratio", "source"]]
    table = table.rename(columns={"source": "zeros_source"})
    save_table(table, EXPERIMENT, reports_dir)

    differences = difference_table(runs, _zeros_per_seed(runs, committed, fresh),
                                   {(r.setting, r.metric): r.zeros for r in table.itertuples()
                                    if r.experiment in SOURCES and "seed " not in r.setting})
    verdicts = {(r.setting, r.metric): r.text for r in differences.itertuples()}

    # 4. result rows: every number computed here (committed zeros numbers are not recorded again), each with
    # its piece's scale; the control's time-domain rows with the trivial predictor of notebook 02
    note = f"[MASK] init ablation, {profile} settings of the source experiment"
    triv = frequency.trivial(control_config(profile, "normal"))  # the test series do not depend on the init
    for init in INITS:
        if fresh or init == "normal":
            for (setting, metric), value in runs[init]["metrics"].items():
                piece = _piece(setting)
                hs = runs[init]["histories"].get(piece, [])
                ok = None
                if piece == "raw-t control" and metric.startswith("time_mse_hidden"):
                    key = "one" if setting.startswith("1 mode") else "two"
                    col = "time_mse_noisy" if metric == "time_mse_hidden_mean" else "time_mse_clean"
                    ok = learned(value, float(triv[key][col].mean()), f"{triv['name']} ({setting.split(',')[0]})")
                extra = f"; normal - zeros: {verdicts[(setting, metric)]}" if (setting, metric) in verdicts else ""
                record(EXPERIMENT, f"{setting}, mask_token_init={init}", metric, value, profile=profile,
                       n_seeds=len(hs), scale=piece_scale(profile, piece, len(hs)), learned=ok, losses=_losses(hs),
                       note=f"{note} ({_source(setting)}){extra}", reports_dir=reports_dir)
        if not fresh:
            hs = runs[init]["histories"]["Synthetic"][:1] if init == "zeros" else \
                [h for s, h in zip(list(runs[init]["per_seed"]), runs[init]["histories"]["Synthetic"])
                 if s == CHECK_SEED]
            for (setting, metric), value in runs[init]["per_seed"][CHECK_SEED].items():
                record(EXPERIMENT, f"{setting}, seed {CHECK_SEED}, mask_token_init={init}", metric, value,
                       profile=profile, scale=piece_scale(profile, "Synthetic", 1), losses=_losses(hs),
                       note=f"{note} (table7_interpolation)", reports_dir=reports_dir)
        for r in mechanism[mechanism.init == init].itertuples():
            one_step = {k: v for k, v in piece_scale(profile, r.piece).items() if k in ("data", "model", "positions")}
            for metric in ("grad_norm_step1", "grad_norm_mask_token_step1", "loss_step0", "loss_after_1_step"):
                record(EXPERIMENT, f"{r.piece}, first batch, mask_token_init={init}", metric, getattr(r, metric),
                       profile=profile, scale=one_step, note=f"{note}; one step on the run's first batch, fixed mask",
                       reports_dir=reports_dir)

    fig = plot_first_steps(curves, profile)
    save_figure(fig, "fig_init_ablation_mask_token", reports_dir)
    plt.close(fig)
    return dict(profile=profile, table=table, mechanism=mechanism, curves=curves, check=check, runs=runs,
                differences=differences, fresh_zeros=fresh, seconds=time.perf_counter() - t0)


def _reproduction_check(fresh: dict, committed: dict) -> dict:
    """{(setting, metric): {fresh, committed (the closer per-seed value), abs_diff, reproduces}}."""
    out = {}
    for key, value in fresh.items():
        c = committed.get(("table7_interpolation",) + key)
        candidates = committed_per_seed(*c) if c else ()
        best = min(candidates, key=lambda v: abs(v - value)) if candidates else float("nan")
        diff = abs(best - value)
        out[key] = dict(fresh=value, committed=best, abs_diff=diff, reproduces=bool(diff <= TOLERANCE))
    return out


# ----------------------------------------------------------------------------- figures

def plot_first_steps(curves: dict, profile: str):
    """Training loss (top) and gradient norm before clipping (bottom) of the first steps, per piece and init."""
    fig, axes = plt.subplots(2, len(curves), figsize=(4.2 * len(curves), 6.6), squeeze=False)
    colors = {"zeros": "tab:red", "normal": "tab:blue"}
    for j, (piece, by_init) in enumerate(curves.items()):
        for init, h in by_init.items():
            label = "zeros (authors)" if init == "zeros" else "N(0, 0.02) (MAE)"
            axes[0, j].plot(h.step, h.loss, marker=".", color=colors[init], label=label)
            axes[1, j].plot(h.step, h.grad_norm, marker=".", color=colors[init], label=label)
        axes[0, j].set(title=piece, yscale="log", ylabel="training loss" if j == 0 else None)
        axes[1, j].set(yscale="log", xlabel="optimiser step", ylabel="gradient norm (before clipping)" if j == 0 else None)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, title="[MASK] init", title_fontsize=8, loc="upper center",
               bbox_to_anchor=(0.5, 0.0), ncol=2)
    fig.suptitle(f"[MASK] init: the first optimiser steps ({report.title_tag(profile)})")
    fig.tight_layout()
    return fig


def plot_learning_curves(res: dict):
    """Full training-loss curves of every run trained here (normal; zeros where trained fresh)."""
    pieces = list(res["runs"]["normal"]["histories"])
    fig, axes = plt.subplots(1, len(pieces), figsize=(4.2 * len(pieces), 4.0), squeeze=False)
    for ax, piece in zip(axes[0], pieces):
        several = sum(len(r["histories"].get(piece, [])) for r in res["runs"].values()) > 1
        for init, color in (("zeros", "tab:red"), ("normal", "tab:blue")):
            hs = res["runs"][init]["histories"].get(piece, [])
            seeds = list(res["runs"][init].get("per_seed", {})) if piece == "Synthetic" else []
            for k, h in enumerate(hs):
                if "loss" not in h:  # no logged row (a dry run's two steps)
                    continue
                h = h.dropna(subset=["loss"])
                run = (f", seed {seeds[k]}" if len(seeds) == len(hs) else f", run {k + 1}") if several else ""
                ax.plot(h.step, h.loss, color=color, alpha=1.0 if k == 0 else 0.5, marker="." if len(h) < 10 else None,
                        label=init + run)
        ax.set(title=piece, xlabel="step", yscale="log")
        # below the axis label, not on it: anchored lower than the tick labels and "step" reach
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.24), ncol=3)
    axes[0, 0].set_ylabel("training loss (logged mean)")
    fig.suptitle(f"[MASK] init: training loss of every run trained here ({report.title_tag(res['profile'])})")
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- the reading

def training_flags(res: dict) -> dict:
    """{(init, piece, run index): `report.loss_flags`} of every run trained here whose loss spiked or diverged."""
    out = {}
    for init, r in res["runs"].items():
        for piece, hs in r["histories"].items():
            for k, losses in enumerate(_losses(hs)):
                flag = loss_flags(losses)
                if flag:
                    out[(init, piece, k)] = flag
    return out


LEARNED = 0.5  # the raw-t control "learns" when its 1-mode time MSE is below this share of predicting 0
CLOSE = 1e-3  # the prose counts a metric for an init only when it is lower by more than this share


def conclusion(res: dict) -> str:
    """Markdown sentences stating what the run found, computed from its table (no hand-typed numbers)."""
    t, profile = res["table"], res["profile"]
    runs = t[t.experiment.isin(SOURCES) & (t.better != NOT_COMPARED) & ~t.setting.str.contains("seed ")]
    gap = (runs.normal - runs.zeros).abs() / runs[["zeros", "normal"]].abs().max(axis=1)
    n_normal = int(((runs.better == "normal") & (gap > CLOSE)).sum())
    n_zeros = int(((runs.better == "zeros") & (gap > CLOSE)).sum())

    def row(setting, metric):
        r = t[(t.setting == setting) & (t.metric == metric)]
        return r.iloc[0] if len(r) else None

    lines = [f"**Profile `{profile}`.** Over the {len(runs)} error metrics of the three experiments, MAE's "
             f"N(0, 0.02) [MASK] is lower by more than {CLOSE:.1%} on {n_normal}, the authors' zeros on {n_zeros}, "
             f"and the two are within {CLOSE:.1%} on {len(runs) - n_normal - n_zeros}."]
    diffs = res.get("differences")
    if diffs is not None and len(diffs):
        counts = diffs.verdict.str.replace(r" \(1 seed\)", "", regex=True).value_counts()
        lines[0] += (" Paired over seeds (normal - zeros, `report.difference`, margin "
                     f"{MARGIN:.0%} of the zeros value): " + ", ".join(f"{n} {v}" for v, n in counts.items())
                     + ". A lower number counts for an init only where the difference is resolved.")
    verdict = {} if diffs is None else {(r.setting, r.metric): r.text for r in diffs.itertuples()}
    for setting, metric in (("Spiral", "rmse_clean"), ("Synthetic, 3-10 observed", "mse_noisy"),
                            ("1 mode" + CONTROL, "time_mse_hidden_mean"), ("2 modes" + CONTROL, "time_mse_hidden_mean")):
        r = row(setting, metric)
        if r is not None:
            lines.append(f"- {setting}, `{metric}`: zeros {r.zeros:.4g}, normal {r.normal:.4g} "
                         f"({100 * (r.ratio - 1):+.1f} %)"
                         + (f"; normal - zeros {verdict[(setting, metric)]}" if (setting, metric) in verdict else "")
                         + ".")
    ref = row("1 mode" + CONTROL, "time_mse_hidden_mean of predicting 0 (reference)")
    ctl = row("1 mode" + CONTROL, "time_mse_hidden_mean")
    if ref is not None and ctl is not None:
        learns = {init: getattr(ctl, init) < LEARNED * ref.zeros for init in INITS}
        lines.append(f"- The raw-t control (1 mode) sits at {ctl.zeros / ref.zeros:.0%} of the loss of predicting 0 "
                     f"with zeros and at {ctl.normal / ref.normal:.0%} with normal: it "
                     + ("learns with neither init" if not any(learns.values()) else
                        "learns with normal only" if learns["normal"] and not learns["zeros"] else
                        "learns with zeros only" if learns["zeros"] else "learns with both inits")
                     + f" (learns = below {LEARNED:.0%} of that level).")
    mech = t[(t.experiment == "mechanism (first batch)")]
    g = mech[mech.metric == "grad_norm_step1"]
    share = (mech[mech.metric == "grad_norm_mask_token_step1"].zeros.values / g.zeros.values).min()
    lines.append(f"- Mechanism: the first step's gradient norm is {(g.zeros / g.normal).min():.2g}-"
                 f"{(g.zeros / g.normal).max():.2g} times larger with zeros "
                 f"({g.zeros.min():.2g}-{g.zeros.max():.2g} against {g.normal.min():.2g}-{g.normal.max():.2g}); "
                 f"the [MASK] token's share of the zeros norm is at least {share:.4f}.")
    before, after = (mech[mech.metric == m].set_index("setting") for m in ("loss_step0", "loss_after_1_step"))
    for init in INITS:
        up = [s.split(" (")[0] for s in before.index if after.loc[s, init] > before.loc[s, init]]
        lines.append(f"- After one step on the first batch the loss rises with {init} on "
                     + (", ".join(up) if up else "no piece") + f" ({len(up)} of {len(before)}).")
    if res.get("check"):
        diffs = [c["abs_diff"] for c in res["check"].values()]
        ok = all(c["reproduces"] for c in res["check"].values())
        source = ("every zeros run trained here" if res.get("fresh_zeros") else "committed quick results")
        lines.append(f"- Zeros numbers: {source}; the fresh zeros Synthetic seed {CHECK_SEED} "
                     + ("reproduces" if ok else "does **not** reproduce")
                     + f" its committed values (largest |difference| {max(diffs):.1e}, tolerance {TOLERANCE:g}).")
    flags = training_flags(res)
    lines.append("- Training flags: " + ("none: no run trained here spiked or diverged." if not flags else
                 "; ".join(f"{piece} ({init}, run {k + 1}): {f}" for (init, piece, k), f in flags.items())
                 + ". No conclusion is drawn from a flagged run."))
    if profile == "smoke":
        lines.append("- `smoke` trains a few steps of 2-block encoders: these numbers only show that the pipeline "
                     "runs; the comparison needs `quick`.")
    return "\n".join(lines)
