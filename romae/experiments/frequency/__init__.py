"""Frequency retention (App. B.4, Figures 3-5): how well does RoMAE interpolate sines of growing frequency?

RoMAE-tiny is trained MAE-style on noisy sums of one or two sines (`romae.data.sines`): one token per
point (token_dim 1), 1-D positions = the times t in [0, 1] times `position_scale` (1 = the authors'
raw t; see below), [CLS] on, and a task-given mask: the 50 observed points are visible, the 50 others are hidden and predicted;
the loss is the MSE on the hidden points against the noisy values. Evaluation, per test frequency
(single mode, Figure 3) and per pair of test frequencies (two modes, Figure 4):

* time-domain MSE on the hidden points, against the noisy values (the training loss; the authors'
  metric) and against the clean signal;
* FFT error: the full series is reconstructed (observed noisy points + predictions, `model.reconstruct`)
  and its one-sided FFT magnitude compared with the clean signal's: the MSE over all bins ("MSE on the
  full FFT") and the squared error at the bin(s) of the series' frequencies ("MSE at the frequency bin").

Positions. With raw t in [0, 1] the fastest RoPE pair turns less than 1 radian across a whole series,
so neighbouring points are nearly indistinguishable to attention (`authors-code.md` 3.4). On this CPU a
1,000-step probe with raw t stayed at the loss of predicting zero (about the signal variance), while
t x 100 learned; the quick profile therefore scales t by T - 1 = 99 (positions = sample index, spacing 1)
and also evaluates the raw-t model as a control, both labelled in the results. The paper profile keeps
raw t, as the authors ran it.

The claim of Figures 3 and 4 (the FFT error grows with frequency above 9 Hz) is recorded with the trivial
predictor's error on the same series (`trivial`: the observed points kept, every hidden point filled with 0
or with the series' observed mean, whichever scores lower); the summary counts the claim only when the
model's time-domain MSE is at most half of it. Every row records its scale (`run_scale`: series, epochs,
model and positions beside the `paper` profile's), so rescaled positions show as such.

Figure 5 is one 1 + 5 Hz realisation with its spectrum. Trained models and evaluations are cached
(`romae.cache.cached`), keyed by the resolved config.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from ..compendium import plan, report
from .. import runtime
from ..cache import cached
from ..config import RoMAEConfig, TrainConfig, check_profile, size
from ..data.sines import SineConfig, one_mode_freqs, sine_series, snr, two_mode_freqs
from ..model import RoMAEForPreTraining
from ..compendium.report import learned, loss_flags, record, save_table, scale
from ..train import fit_cached

EXPERIMENT = "fig3_frequency_retention"
FIG4 = "fig4_frequency_retention_two_modes"  # its check: error rising with the higher frequency
AUTHORS_TEST_FREQS = (1, 3, 5, 7, 9, 12, 15, 18, 21, 24)  # the authors' evaluation notebooks


@dataclass(frozen=True)
class FrequencyConfig:
    """One run of the experiment. Defaults = the `paper` profile.

    The appendix gives no hyper-parameter table for B.4, only "RoMAE-tiny, 200 epochs, 10,000
    examples"; optimiser, learning rate, batch, warm-up and clipping are the authors' trainer config
    for `Interpolation_frequency` (AdamW lr 1e-3, batch 8, warm-up 200, clip 1, AdamW's default weight
    decay 0.01, seed 42).
    """

    encoder: str = "tiny"  # RoMAE-tiny (App. B.4)
    decoder: str = "tiny-shallow"  # App. A.1 (the authors' frequency runs used full tiny, 12 blocks)
    n_train: int = 10_000  # training series (App. B.4)
    epochs: int = 200  # App. B.4 (the authors' committed trainer config says 50)
    batch_size: int = 8  # authors' trainer config
    lr: float = 1e-3  # authors' trainer config
    warmup_steps: int = 200  # authors' trainer config
    grad_clip: float | None = 1.0  # authors' trainer config
    weight_decay: float = 0.01  # AdamW default, which the authors' trainer left in place
    seed: int = 42  # model init and batch order (authors' default)
    train_seed: int = 0  # data seed of the training series
    test_seed: int = 1  # data seed of the evaluation series (a different stream from training)
    test_freqs: tuple[int, ...] = AUTHORS_TEST_FREQS  # paper: "per individual frequency"; which ones: authors
    n_test_one: int = 200  # series per test frequency, single mode (App. B.4)
    n_test_two: int = 200  # series per pair of test frequencies, two modes (App. B.4: 200 per case)
    example_freqs: tuple[int, int] = (1, 5)  # Figure 5's realisation
    eval_batch: int = 256  # inference batch (no effect on the numbers)
    position_scale: float = 1.0  # positions = t * position_scale (1 = authors' raw t; quick: 99 = sample index)
    control: bool = False  # also train and evaluate the raw-t model (position_scale 1) as a control
    mask_token_init: str = "zeros"  # RoMAEConfig.mask_token_init: zeros (the authors') | normal (MAE's N(0, 0.02))
    progress: bool = True  # tqdm bar while training
    sines: SineConfig = field(default_factory=SineConfig)  # the data generator (App. B.4)

    def model_config(self) -> RoMAEConfig:
        # one token per point; 1-D positions = raw t; [CLS] at t = 0; loss on hidden points vs noisy values
        return RoMAEConfig(token_dim=1, n_axes=1, encoder=size(self.encoder), decoder=size(self.decoder),
                           use_cls=True, mask_token_init=self.mask_token_init)

    def train_config(self) -> TrainConfig:
        return TrainConfig(epochs=self.epochs, batch_size=self.batch_size, lr=self.lr,
                           warmup_steps=self.warmup_steps, grad_clip=self.grad_clip,
                           weight_decay=self.weight_decay, seed=self.seed, progress=self.progress,
                           log_every=50)


PROFILES = {
    # the paper's sizes: 10,000 series x 200 epochs = 250,000 steps of batch 8 (a GPU job)
    "paper": FrequencyConfig(),
    # reduced CPU run: 3,000 series x 8 epochs = 3,000 steps of batch 8 (1.2 % of the paper's steps),
    # ~16 min at the 3.2 steps/s measured on this 2-core CPU (single-threaded torch; ~30 min at 1.8 steps/s
    # on a shared CPU); 50 series per test frequency and 20 per pair of test frequencies
    # positions scaled to sample index (deviation, see the module docstring), with the raw-t control
    "quick": FrequencyConfig(n_train=3_000, epochs=8, n_test_one=50, n_test_two=20, position_scale=99.0,
                             control=True),
    # seconds, for CI / nbval: 2-block encoder, 32 series x 1 epoch (4 steps), 4 test frequencies
    "smoke": FrequencyConfig(encoder="tiny-shallow", n_train=32, epochs=1, warmup_steps=2,
                             test_freqs=(1, 5, 12, 24), n_test_one=4, n_test_two=2, progress=False),
}


def config(profile: str) -> FrequencyConfig:
    """The settings of a profile (smoke | quick | paper); raises ValueError on an unknown name."""
    return PROFILES[check_profile(profile)]


def paper_trainings() -> list[plan.Training]:
    """Notebook 02's paper training (`romae.compendium.plan`): the interpolation model on 10,000 generated series."""
    cfg = config("paper")
    return [plan.Training("frequency interpolation", "pretrain", cfg.model_config(), cfg.train_config(), cfg.sines.T,
                          cfg.n_train, runs=1 + bool(cfg.control and cfg.position_scale != 1.0),
                          hidden=1 - cfg.sines.n_obs / cfg.sines.T, source="App. B.4 (generated)")]


def control_config(cfg: FrequencyConfig) -> FrequencyConfig:
    """The raw-t control of `cfg`: the same run with the authors' positions t in [0, 1] (position_scale 1)."""
    return dataclasses.replace(cfg, position_scale=1.0, control=False)


# ----------------------------------------------------------------------------- data and model

def to_tensors(series: dict[str, np.ndarray], position_scale: float = 1.0) -> dict[str, torch.Tensor]:
    """Generator output -> model inputs: values [n, T, 1], positions [n, 1, T] (t * position_scale),
    mask [n, T] (True = hidden)."""
    if not position_scale > 0:
        raise ValueError(f"position_scale must be > 0, got {position_scale}")
    n, T = series["values"].shape
    t = torch.as_tensor(series["t"] * position_scale, dtype=torch.float32)
    return dict(values=torch.as_tensor(series["values"]).unsqueeze(-1),
                positions=t.expand(n, 1, T).contiguous(),
                mask=~torch.as_tensor(series["observed"]))


def train_model(cfg: FrequencyConfig, cache_dir=None, refresh: bool = False, checkpoints: bool = False,
                profile: str = "") -> dict:
    """Train (or load from the cache) the interpolation model -> {state_dict, history, seconds, steps}.

    `checkpoints`: keep checkpoints and history.jsonl in <repo>/runs/frequency_model-<config hash>/, so
    an interrupted run resumes where it stopped (the hash keeps runs of different configs apart).
    """
    key = dict(n_train=cfg.n_train, train_seed=cfg.train_seed, sines=dataclasses.asdict(cfg.sines))
    if cfg.position_scale != 1.0:  # only then, so raw-t entries cached before the option existed stay valid
        key["position_scale"] = cfg.position_scale
    data = to_tensors(sine_series(cfg.n_train, cfg.train_seed, cfg.sines), cfg.position_scale)
    train = plan.fit_memory(cfg.train_config(), cfg.model_config(), cfg.sines.T, "pretrain", profile,
                            hidden=1 - cfg.sines.n_obs / cfg.sines.T)  # paper: the planned micro-batch
    return fit_cached("frequency_model", RoMAEForPreTraining, cfg.model_config(), data, train, key,
                      seed=cfg.seed, cache_dir=cache_dir, refresh=refresh, checkpoints=checkpoints)


def load_model(cfg: FrequencyConfig, trained: dict) -> RoMAEForPreTraining:
    model = RoMAEForPreTraining(cfg.model_config())
    model.load_state_dict(trained["state_dict"])
    return model.eval()


# ----------------------------------------------------------------------------- metrics

def one_sided_spectrum(x: np.ndarray) -> np.ndarray:
    """One-sided FFT magnitude along the last axis: |rfft(x)| / N with every bin but DC (and, for even
    N, the Nyquist bin) doubled, so a sine of amplitude A on a bin reads A. x: [..., N] -> [..., N//2 + 1]."""
    N = x.shape[-1]
    mag = np.abs(np.fft.rfft(x, axis=-1)) / N
    last = mag.shape[-1] - 1 if N % 2 == 0 else mag.shape[-1]  # the Nyquist bin has no mirror image
    mag[..., 1:last] *= 2
    return mag


def frequency_bin(f, T: int) -> np.ndarray:
    """Bin of frequency f (Hz) in the rfft of T samples on t = linspace(0, 1, T): f * T * dt, dt = 1/(T-1)."""
    return np.rint(np.asarray(f) * T / (T - 1)).astype(np.int64)


def fft_errors(recon: np.ndarray, clean: np.ndarray, freqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spectral errors of reconstructions recon [n, T] against clean signals [n, T].

    Returns (fft_mse [n]: mean over all one-sided bins of the squared magnitude difference,
    bin_mse [n]: the squared magnitude difference at the bins of the series' frequencies freqs [n, K]
    (-1 = absent), averaged over the present ones).
    """
    a, b = one_sided_spectrum(recon.astype(np.float64)), one_sided_spectrum(clean.astype(np.float64))
    sq = (a - b) ** 2  # [n, bins]
    freqs = np.atleast_2d(np.asarray(freqs).T).T  # [n] -> [n, 1]
    present = freqs >= 0
    bins = frequency_bin(np.where(present, freqs, 0), recon.shape[-1])
    at = np.take_along_axis(sq, bins, axis=1)
    return sq.mean(axis=1), (at * present).sum(1) / present.sum(1)


@torch.no_grad()
def evaluate(model: RoMAEForPreTraining, series: dict[str, np.ndarray], batch: int = 256,
             position_scale: float = 1.0):
    """Interpolate every series -> (per-series metrics DataFrame, reconstructions [n, T])."""
    x = to_tensors(series, position_scale)
    dev = next(model.parameters()).device
    recon = torch.cat([model.reconstruct(x["values"][i:i + batch].to(dev), x["positions"][i:i + batch].to(dev),
                                         x["mask"][i:i + batch].to(dev)).cpu()
                       for i in range(0, len(x["values"]), batch)]).squeeze(-1).numpy()
    return series_metrics(recon, series), recon


def series_metrics(recon: np.ndarray, series: dict[str, np.ndarray]) -> pd.DataFrame:
    """Per-series errors of reconstructions recon [n, T] (observed points + predictions) of `series`:
    time-domain MSE on the hidden points against the noisy values (the training loss) and the clean signal,
    and the FFT errors (`fft_errors`)."""
    hidden = ~series["observed"]
    n_hidden = hidden.sum(1)
    fft_mse, bin_mse = fft_errors(recon, series["clean"], series["freqs"])
    return pd.DataFrame(dict(
        f1=series["freqs"][:, 0], f2=series["freqs"][:, 1],
        time_mse_noisy=((recon - series["values"]) ** 2 * hidden).sum(1) / n_hidden,  # the training loss
        time_mse_clean=((recon - series["clean"]) ** 2 * hidden).sum(1) / n_hidden,
        fft_mse=fft_mse, fft_bin_mse=bin_mse))


# The trivial interpolators a model must beat before the figures' claims count (`trivial`): the observed
# points kept, every hidden point filled with a constant.
TRIVIAL = {"zero": "predicting 0 at every hidden point",
           "mean": "each series' observed mean at every hidden point"}


def trivial_reconstruction(series: dict[str, np.ndarray], how: str) -> np.ndarray:
    """The series [n, T] with every hidden point replaced by 0 (`how` = "zero") or by the mean of that series'
    observed points ("mean")."""
    obs, values = series["observed"], series["values"].astype(np.float64)
    if how == "zero":
        fill = np.zeros((len(values), 1))
    elif how == "mean":
        fill = (values * obs).sum(1, keepdims=True) / obs.sum(1, keepdims=True)
    else:
        raise ValueError(f"unknown trivial predictor {how!r}; choose among {', '.join(TRIVIAL)}")
    return np.where(obs, values, fill)


METRICS = ("time_mse_noisy", "time_mse_clean", "fft_mse", "fft_bin_mse")


def per_case(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean and std of every metric per frequency (one mode) or pair (two modes)."""
    g = frame.groupby(["f1", "f2"])[list(METRICS)]
    out = pd.concat([g.mean(), g.std(ddof=0).add_suffix("_std"), g.size().rename("n")], axis=1).reset_index()
    out.insert(0, "modes", np.where(out.f2 >= 0, 2, 1))
    return out[["modes", "f1", "f2", "n"] + [c for m in METRICS for c in (m, m + "_std")]]


def trend_fit(one: pd.DataFrame, metric: str, f_min: int = 9) -> dict | None:
    """The least-squares line of the per-frequency mean `metric` for f >= f_min (one mode), with the slope's 95 %
    t interval (`report.slope`: n - 2 degrees of freedom over the frequencies); None with fewer than 3."""
    m = one[one.f1 >= f_min].groupby("f1")[metric].mean()
    if len(m) < 3:
        return None
    return report.slope(m.index.values, m.values)


def linear_trend(one: pd.DataFrame, metric: str, f_min: int = 9) -> tuple[float, float]:
    """Least-squares slope (per Hz) and R^2 of the per-frequency mean `metric` for f >= f_min (one mode)."""
    fit = trend_fit(one, metric, f_min)
    return (float("nan"), float("nan")) if fit is None else (fit["slope"], fit["r2"])


def high_pair_preference(two: pd.DataFrame, metric: str = "fft_mse", f_min: int = 9) -> dict:
    """Figure 4's remark, measured: the mean `metric` of the two-mode series whose frequencies are both >= f_min
    ('both high') against those with one below and one at or above it ('one low, one high'), with their counts."""
    lo, hi = two[["f1", "f2"]].min(axis=1), two[["f1", "f2"]].max(axis=1)
    both, mixed = two[lo >= f_min][metric], two[(lo < f_min) & (hi >= f_min)][metric]
    return dict(metric=metric, f_min=f_min, both_high=float(both.mean()) if len(both) else float("nan"),
                n_both_high=int(len(both)), one_low_one_high=float(mixed.mean()) if len(mixed) else float("nan"),
                n_one_low_one_high=int(len(mixed)))


def trend_table(one: pd.DataFrame, f_min: int = 9) -> pd.DataFrame:
    """Does the error grow with frequency (one mode)? Per metric: the rank correlation of the per-frequency
    mean with f (Spearman; +1 = monotonic growth) and the straight-line slope and R^2 for f >= f_min."""
    rows = []
    for metric in METRICS:
        m = one.groupby("f1")[metric].mean()
        f = m.index.to_series()
        slope, r2 = linear_trend(one, metric, f_min)
        rows.append(dict(metric=metric, spearman_vs_f=m.rank().corr(f.rank()),
                         **{f"slope_per_hz_f>={f_min}": slope, f"r2_line_f>={f_min}": r2}))
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- the experiment

def test_series(cfg: FrequencyConfig) -> dict[str, dict]:
    """The evaluation series of `cfg`: one mode (n_test_one per test frequency), two modes (n_test_two per pair
    of test frequencies) and Figure 5's example -> {one, two, example} (a dry run: a few of each)."""
    n_one, n_two = runtime.dry_count(cfg.n_test_one, 2), runtime.dry_count(cfg.n_test_two, 1)  # dry run: a few
    return dict(one=sine_series(len(cfg.test_freqs) * n_one, cfg.test_seed, cfg.sines,
                                freqs=one_mode_freqs(cfg.test_freqs, n_one)),
                two=sine_series(len(cfg.test_freqs) * (len(cfg.test_freqs) - 1) // 2 * n_two,
                                cfg.test_seed + 1, cfg.sines, freqs=two_mode_freqs(cfg.test_freqs, n_two)),
                example=sine_series(1, cfg.test_seed + 2, cfg.sines, freqs=np.array([cfg.example_freqs])))


def trivial(cfg: FrequencyConfig) -> dict:
    """The trivial predictor of `cfg`'s test series, scored as the model is: of TRIVIAL's two, the one with
    the lower mean time-domain MSE (hidden points vs noisy values) over the one- and two-mode series.
    -> {name (its description), how, one, two (per-series frames as `evaluate`'s)}."""
    series = test_series(cfg)
    frames = {how: {k: series_metrics(trivial_reconstruction(series[k], how), series[k]) for k in ("one", "two")}
              for how in TRIVIAL}
    how = min(TRIVIAL, key=lambda h: sum(frames[h][k].time_mse_noisy.mean() for k in ("one", "two")))
    return dict(name=TRIVIAL[how], how=how, **frames[how])


def evaluate_config(cfg: FrequencyConfig, trained: dict, cache_dir=None, refresh: bool = False) -> dict:
    """Evaluate a trained model on the one-mode, two-mode and example series (cached) -> dict of frames."""
    def compute_eval():
        model = load_model(cfg, trained)
        series = test_series(cfg)
        one_s, two_s, ex = series["one"], series["two"], series["example"]
        one, _ = evaluate(model, one_s, cfg.eval_batch, cfg.position_scale)
        two, _ = evaluate(model, two_s, cfg.eval_batch, cfg.position_scale)
        ex_frame, ex_recon = evaluate(model, ex, cfg.eval_batch, cfg.position_scale)
        example = {**ex, "recon": ex_recon, "metrics": ex_frame.iloc[0].to_dict()}
        train_snr = snr(sine_series(cfg.n_train, cfg.train_seed, cfg.sines), cfg.sines)
        return dict(one=one.to_dict("list"), two=two.to_dict("list"), example=example, snr=train_snr)

    key = dataclasses.asdict(cfg) | {"trained": trained["steps"]}
    key.pop("control"), key.pop("progress")
    ev = cached("frequency_eval", key, compute_eval, cache_dir=cache_dir, refresh=refresh)
    return dict(one=pd.DataFrame(ev["one"]), two=pd.DataFrame(ev["two"]), example=ev["example"], snr=ev["snr"])


def positions_label(position_scale: float) -> str:
    """How positions were made from the times t in [0, 1]: 't' (raw, the authors') or 't x 99'."""
    return "t" if position_scale == 1.0 else f"t x {position_scale:g}"


def run_scale(cfg: FrequencyConfig) -> dict:
    """A row's scale against the `paper` profile (App. B.4: RoMAE-tiny, 10,000 series, 200 epochs, raw t):
    training series, epochs, model (encoder / decoder) and positions."""
    p = config("paper")
    return scale(data=(cfg.n_train, p.n_train), epochs=(cfg.epochs, p.epochs),
                 model=(f"encoder {cfg.encoder}, decoder {cfg.decoder}", f"encoder {p.encoder}, decoder {p.decoder}"),
                 positions=(positions_label(cfg.position_scale), positions_label(p.position_scale)))


METRIC_COLUMNS = (("time_mse_hidden_mean", "time_mse_noisy"), ("time_mse_hidden_clean_mean", "time_mse_clean"),
                  ("fft_mse_mean", "fft_mse"), ("fft_bin_mse_mean", "fft_bin_mse"))


def _record_variant(ev: dict, suffix: str, profile: str, note: str, reports_dir, *, scale: dict, trivial: dict,
                    losses=None) -> list[dict]:
    """Record one model's rows (one and two modes, the Figure 3 and 4 slope checks) -> the recorded rows.
    Every row of a mode carries `learned`: the model's time-domain MSE on the hidden points (vs noisy values)
    against the trivial predictor's (`trivial`) on the same series."""
    rows = []
    for setting, key in (("1 mode", "one"), ("2 modes", "two")):
        frame = ev[key]
        ok = learned(float(frame.time_mse_noisy.mean()), float(trivial[key].time_mse_noisy.mean()),
                     f"{trivial['name']} (time-domain MSE on hidden points vs noisy values, {setting})")
        for metric, col in METRIC_COLUMNS:
            rows.append(record(EXPERIMENT, setting + suffix, metric, frame[col].mean(), ours_std=frame[col].std(ddof=0),
                               profile=profile, scale=scale, note=note, learned=ok, losses=losses,
                               reports_dir=reports_dir))
        # the claim holds only when the slope's 95 % interval lies above 0 (`interval`: the summary reads it)
        if key == "one":
            fit = trend_fit(frame, "fft_mse")
            if fit is not None:
                rows.append(record(EXPERIMENT, "1 mode, f >= 9 Hz" + suffix, "fft_mse_slope_per_hz", fit["slope"],
                                   profile=profile, scale=scale, learned=ok, losses=losses, reports_dir=reports_dir,
                                   interval=fit, note=f"least-squares slope of the per-frequency mean over {fit['n']} "
                                   f"frequencies; R^2 = {fit['r2']:.2f}; {note}"))
        else:  # Figure 4: the same check with two modes, against each series' higher frequency
            fit = trend_fit(frame.assign(f1=frame[["f1", "f2"]].max(axis=1)), "fft_mse")
            if fit is not None:
                rows.append(record(FIG4, "2 modes, higher f >= 9 Hz" + suffix, "fft_mse_slope_per_hz", fit["slope"],
                                   profile=profile, scale=scale, learned=ok, losses=losses, reports_dir=reports_dir,
                                   interval=fit, note=f"least-squares slope of the mean per higher frequency of the "
                                   f"pair over {fit['n']} frequencies; R^2 = {fit['r2']:.2f}; {note}"))
    return rows


status_table = report.status_table  # the summary's reading of this run's rows


def run(profile: str = "smoke", reports_dir=None, cache_dir=None, refresh: bool = False,
        checkpoints: bool | None = None) -> dict:
    """Train (cached), evaluate (cached), record result rows and save `table_b4_frequency_errors`.

    Returns {profile, config, one, two (per-series frames), table, example, history, train_seconds, steps, snr,
    flags (the training's loss flags, '' if none), learned {1 mode, 2 modes}, trivial (the trivial
    predictor's per-series frames, `trivial`), status (the Figure 3 / 4 checks as the summary reads them),
    control}; `control` (profiles with cfg.control) holds the same for the raw-t model, else None.
    `checkpoints` (default: on for quick and paper, off for smoke): see `train_model`.
    """
    cfg = config(profile)
    checkpoints = profile != "smoke" if checkpoints is None else checkpoints
    variants = [("", cfg)]
    if cfg.control and cfg.position_scale != 1.0:
        variants.append((", raw t (control)", control_config(cfg)))
    base = trivial(cfg)  # the control has the same test series (only the positions differ)
    out, recorded = {}, []
    for suffix, c in variants:
        trained = train_model(c, cache_dir=cache_dir, refresh=refresh, checkpoints=checkpoints, profile=profile)
        ev = evaluate_config(c, trained, cache_dir=cache_dir, refresh=refresh)
        losses = [row["loss"] for row in trained["history"] if row.get("loss") is not None
                  and not math.isnan(row["loss"])]
        note = (f"positions = {positions_label(c.position_scale)} (the paper: "
                f"{positions_label(config('paper').position_scale)}); {c.n_train} series x {c.epochs} epochs, "
                f"decoder {c.decoder}; {len(ev['one'])} one-mode and {len(ev['two'])} two-mode test series")
        rows = _record_variant(ev, suffix, profile, note, reports_dir, scale=run_scale(c), trivial=base,
                               losses=losses)
        recorded += rows
        got = {r["setting"]: json.loads(r["learned"]) for r in rows if r["metric"] == "time_mse_hidden_mean"}
        out[suffix] = dict(profile=profile, config=c, **ev,
                           table=pd.concat([per_case(ev["one"]), per_case(ev["two"])], ignore_index=True),
                           history=pd.DataFrame(trained["history"]), train_seconds=trained["seconds"],
                           steps=trained["steps"], flags=loss_flags(losses), trivial=base,
                           learned={k.removesuffix(suffix): v for k, v in got.items()})
    main = out[""]
    table = main["table"].assign(positions=positions_label(cfg.position_scale))
    if len(out) > 1:  # the saved table holds both variants; res["table"] the main model's rows only
        table = pd.concat([table, out[variants[1][0]]["table"].assign(positions="t (raw, control)")],
                          ignore_index=True)
    save_table(table, "table_b4_frequency_errors", reports_dir)
    record(EXPERIMENT, "training set", "snr", main["snr"], profile=profile,
           scale=scale(data=(cfg.n_train, config("paper").n_train)),
           note="mean(clean^2) / noise variance; the paper quotes 43.1", reports_dir=reports_dir)
    return {**main, "status": status_table(recorded), "control": out[variants[1][0]] if len(out) > 1 else None}


def reading(res: dict) -> str:
    """Markdown lines stating what this run found, from its recorded rows (no hand-typed result): whether each
    model beat the trivial predictor, the Figure 3 / 4 checks as the summary reads them, and training flags
    (no conclusion is drawn from a flagged run)."""
    lines = [f"**Profile `{res['profile']}`.** Trivial predictor: {res['trivial']['name']}."]
    for r, name in ((res, f"positions {positions_label(res['config'].position_scale)}"),
                    (res.get("control"), "raw-t control")):
        if r is None:
            continue
        for setting, info in r["learned"].items():
            verdict = "learned" if info["ok"] else "did not learn"
            lines.append(f"- {name}, {setting}: {verdict} (time-domain MSE {info['model']:.4g} against "
                         f"{info['trivial']:.4g}; learned means <= {info['factor']:g}x)")
        if r["flags"]:
            lines.append(f"- {name}: TRAINING FLAG: {r['flags']}; no conclusion is drawn from this run")
    for r in res["status"].itertuples():
        seen = "" if r.measured == r.status.split(" (")[0] else f" (measured: {r.measured})"
        lines.append(f"- {r.setting}: slope {r.ours:.3g} per Hz -> **{r.status}**{seen}")
    if res["status"].empty:
        lines.append("- no Figure 3 / 4 check recorded (fewer than 3 test frequencies >= 9 Hz)")
    return "\n".join(lines)


def plot_control(res: dict):
    """Time-domain MSE (hidden points, vs noisy values) per frequency: scaled positions vs raw t, with the
    trivial predictor's level (grey) and the noise floor; legend outside the axes."""
    fig, ax = plt.subplots(figsize=(9, 4))
    for r, label, color in ((res, f"positions t x {res['config'].position_scale:g}", "tab:blue"),
                            (res["control"], "positions raw t in [0, 1] (authors)", "tab:orange")):
        g = r["one"].groupby("f1")["time_mse_noisy"]
        ax.errorbar(g.mean().index, g.mean(), yerr=g.std(ddof=0), marker="o", capsize=3, color=color, label=label)
    t = res["trivial"]["one"].groupby("f1")["time_mse_noisy"].mean()
    ax.plot(t.index, t.values, color="tab:gray", ls="-.", marker="x", label=f"trivial: {res['trivial']['name']}")
    ax.axhline(res["config"].sines.noise_std ** 2, color="k", ls=":", lw=1, label="noise variance (floor)")
    ax.set(xlabel="frequency f [Hz]", ylabel="MSE on hidden points", yscale="log",
           title=f"One mode: the effect of the position scale ({report.title_tag(res['profile'])})")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- figures

def _tag(res: dict) -> str:
    """A figure title's run description with the positions used: 'quick profile, positions t x 99, reduced'."""
    tag = report.title_tag(res["profile"]).split(", ", 1)
    return ", ".join([tag[0], f"positions {positions_label(res['config'].position_scale)}", *tag[1:]])


def plot_fig3(res: dict, f_min: int = 9):
    """Figure 3: mean (+- std) FFT MSE (left) and time-domain MSE (right) vs frequency, one mode;
    the two-mode series averaged over the pairs that contain f are overlaid (dashed); grey: the trivial
    predictor (`trivial`) on the same series; black: the least-squares line of the one-mode FFT MSE over
    f >= f_min, whose slope is the paper's claim (> 0, App. B.4)."""
    one, two = res["one"], res["two"]
    both = pd.concat([two.assign(f=two.f1), two.assign(f=two.f2)])  # each pair counts for both its frequencies
    triv = res["trivial"]["one"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 5))
    for ax, cols, title in ((axes[0], [("fft_mse", "FFT MSE", "tab:blue")], "MSE on the FFT"),
                            (axes[1], [("time_mse_noisy", "vs noisy", "tab:blue"),
                                       ("time_mse_clean", "vs clean", "tab:green")],
                             "MSE in the time domain (hidden points)")):
        for col, label, color in cols:  # one colour per metric: solid = 1 mode, dashed = 2 modes
            g = one.groupby("f1")[col]
            ax.errorbar(g.mean().index, g.mean(), yerr=g.std(ddof=0), marker="o", capsize=3, color=color,
                        label=f"1 mode, {label} (mean +- std)")
            m2 = both.groupby("f")[col].mean()
            ax.plot(m2.index, m2.values, ls="--", marker=".", color=color, alpha=0.7,
                    label=f"2 modes, {label} (mean over pairs with f)")
        t = triv.groupby("f1")[cols[0][0]].mean()
        ax.plot(t.index, t.values, color="tab:gray", ls="-.", marker="x", label=f"trivial, 1 mode, {cols[0][1]}")
        ax.set(xlabel="frequency f [Hz]", ylabel="MSE", title=title)
    fit = trend_fit(one, "fft_mse", f_min)
    if fit is not None:
        m = one[one.f1 >= f_min].groupby("f1").fft_mse.mean()
        axes[0].plot(m.index, fit["slope"] * m.index.values + fit["intercept"], color="k", lw=1.5,
                     label=f"least-squares line f >= {f_min} Hz: slope {fit['slope']:.2g} /Hz, 95 % CI "
                           f"[{fit['low']:.2g}, {fit['high']:.2g}] (paper: > 0)")
    for ax in axes:  # one column under each panel: two columns were wider than the panel and overlapped
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=1)
    fig.suptitle(f"Frequency retention: interpolating 50 of 100 points ({_tag(res)}); "
                 f"trivial = {res['trivial']['name']}")
    fig.tight_layout()
    return fig


def plot_fig4(res: dict):
    """Figure 4: two modes; mean FFT MSE (left) and time-domain MSE (right) per pair (f1, f2)."""
    table = per_case(res["two"])
    freqs = sorted(set(table.f1) | set(table.f2))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    for ax, col, title in ((axes[0], "fft_mse", "MSE on the FFT"), (axes[1], "time_mse_noisy", "MSE in time (hidden)")):
        grid = np.full((len(freqs), len(freqs)), np.nan)
        for r in table.itertuples():
            i, j = freqs.index(r.f1), freqs.index(r.f2)
            grid[i, j] = grid[j, i] = getattr(r, col)
        im = ax.imshow(grid, origin="lower", cmap="viridis")
        ax.set(xticks=range(len(freqs)), xticklabels=freqs, yticks=range(len(freqs)), yticklabels=freqs,
               xlabel="f2 [Hz]", ylabel="f1 [Hz]",
               title=f"{title}\ntrivial predictor's mean: {res['trivial']['two'][col].mean():.3g}")
        fig.colorbar(im, ax=ax, shrink=0.85)
    fig.suptitle(f"Two frequency modes ({_tag(res)})")
    fig.tight_layout(rect=(0, 0, 1, 0.95))  # room for the suptitle above the two-line panel titles
    return fig


def plot_fig5(res: dict):
    """Figure 5: one 1 + 5 Hz realisation in time (left) and its one-sided FFT magnitude (right)."""
    ex = res["example"]
    t, obs = ex["t"], ex["observed"][0]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    ax = axes[0]
    ax.plot(t, ex["clean"][0], color="k", lw=1, label="clean signal")
    ax.plot(t[obs], ex["values"][0][obs], "o", ms=4, color="tab:blue", label="observed (noisy)")
    ax.plot(t[~obs], ex["values"][0][~obs], "x", ms=4, color="tab:gray", label="hidden (noisy)")
    ax.plot(t[~obs], ex["recon"][0][~obs], "o", ms=4, mfc="none", color="tab:red", label="RoMAE prediction")
    f = ex["freqs"][0]
    ax.set(xlabel="t", ylabel="x(t)", title=f"time domain, f = {f[0]} + {f[1]} Hz")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=4)
    ax = axes[1]
    fs = (len(t) - 1) / (t[-1] - t[0])  # sampling rate: bin k is k * fs / T Hz
    hz = np.fft.rfftfreq(len(t), d=1 / fs)
    ax.plot(hz, one_sided_spectrum(ex["clean"][0].astype(np.float64)), "k-", label="clean")
    ax.plot(hz, one_sided_spectrum(ex["recon"][0].astype(np.float64)), "r--", label="observed + predicted")
    ax.set(xlabel="frequency [Hz]", ylabel="|FFT| (one-sided)", title="spectrum", xlim=(0, 30))
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2)
    fig.suptitle(f"Figure 5: one realisation ({_tag(res)})")
    fig.tight_layout()
    return fig
