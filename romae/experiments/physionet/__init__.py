"""PhysioNet 2012 interpolation (Sec. 5.5, App. D.9, Table 7): RoMAE against simple baselines.

Data: the 8,000 records of set-a and set-b (`romae.data.physionet`), mTAN/HeTVAE preprocessing, the 80/20
split on sorted record ids, times divided by the split's largest time (so in [0, 1]). Every observed
(time, variable) cell is one scalar token with the 2-D position (time x `time_scale`, variable index),
built by `romae.builders.from_long`. RoMAE-tiny with [CLS] is trained as a masked autoencoder (the
paper's App. D.9: 50 % of the observed tokens hidden, MSE on the hidden ones) and evaluated by
interpolation: the test records' hidden observed values are predicted from the visible ones.

Gross recording errors are winsorised (`winsorise`). The records hold a few values in the wrong unit or
field (pH 735 for 7.35, pH 99, a WBC of 6,252, a temperature of -17.8 C); on HeTVAE's trimmed z-score the worst
lie at |z| ~ 9,500. Replaying the training order of the `quick` profile (`training_order`, `batch_extremes`: no
training) measured the cause of the loss spikes of its first run (13 of 64 logged losses, up to ~10^3x, at the
same steps in both trainings): each lies in a logged window whose batch holds one of eight training records with
a recorded pH of 94-735 or that WBC (|z| 830-9,450), and its height is that value's squared z over the batch's
hidden tokens, averaged over the window's 25 steps (e.g. step 124, record 140525 with pH 735 and 734: loss
17,500 or 35,000 for an untrained model as one or both are hidden, 1.05 winsorised); the other windows holding
such a batch are those where the model's random mask left the value visible. Every value is therefore clipped,
per variable, to the training split's anomaly bounds before anything else sees it: HeTVAE's own thresholds
(`filter_anomalies` in `get_mimiciii_data`, reml-lab/hetvae src/utils.py: the 0.1 % and 99.95 % quantiles of
the variable's training values, between which its z-score statistics are taken). Inputs and targets of
training and test, and every baseline, see the clipped values (the largest |z| left is ~20); variables with at
most 10 distinct values (categorical codes, which HeTVAE's z-score leaves unscaled) are not clipped. HeTVAE
applies the bounds to its statistics only; mTAN's min-max ((x - min) / max over the raw values) bounds every
value in [0, 1] by construction but squeezes a variable's normal range to a sliver when its maximum is a gross
error (pH: 7.4 / 735). The paper uses HeTVAE's preprocessed release (`physionet_compressed.npz`), whose
preprocessing script is not public, so ours is a documented stand-in. The scalings' statistics are fitted on the
recorded (unclipped) training values, so they are HeTVAE's and mTAN's exactly.

Both open questions of the protocol are evaluated rather than assumed:

* normalisation: mTAN's min-max ((x - min) / max) and HeTVAE's trimmed z-score, both fitted on the
  training split. Every method predicts in raw units and is scored on both scales (the model is trained
  on one; an affine map per variable takes its predictions to the other);
* masking unit: 50 % of the observed *tokens* hidden (the paper's appendix), or 50 % of the observed
  *time points* hidden with every value at them (HeTVAE's `subsample_timepoints`), the same masks
  for every method, `mask_draws` seeded draws.

Baselines (same split, masks, scale): the training mean of each variable; the record's own mean of the
variable's visible values; linear interpolation in time between the record's visible values of that
variable (nearest at the edges). The last two fall back to the training mean when the record shows no
value of the variable. MSE is pooled over all hidden values of all test records (HeTVAE's
`evaluate_hetvae`: total squared error / number of scored values). Every method is a result row (metric
`mse`; the baselines' and the raw-time control's settings name them), so the summary shows them beside RoMAE.

The headline scoring (`LEAD`), the one compared with the paper's 0.57 (`romae/reference/paper_values.csv`), is
the paper's protocol: every hidden value of the preprocessed (winsorised) data scored on the z-score, as
HeTVAE's `evaluate_hetvae` scores every hidden value of its release. Beside it: the same with the winsorised
values (those recorded beyond the bounds, ~0.1 %) left unscored, which shows whether their treatment moves the
result, and mTAN's min-max.

Rows count trained models (`n_seeds`: one per RoMAE run, none for a baseline) apart from the seeded
evaluation masks (`mask_draws`, said in the note); the +- is the std over mask draws.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from ..compendium import plan, report
from .. import runtime
from ..builders import from_long
from ..cache import cached
from ..config import RoMAEConfig, TrainConfig, check_profile, size
from ..data import physionet as P
from ..data.catalog import Need, require
from ..masking import equalize, keep_groups, trim_padding
from ..model import RoMAEForPreTraining
from ..compendium.reference import peer_values
from ..compendium.report import record, save_table
from ..feeding import bucketed
from ..train import fit_cached

EXPERIMENT = "table7_interpolation"
PAPER_TRAIN_RECORDS = 6_400  # 80 % of set-a + set-b's 8,000 records (mTAN's split)
PAPER_TEST_RECORDS = 1_600  # the other 20 %
PAPER_POSITIONS = "t x 1"  # App. D.9: time t / T in [0, 1] (our time_scale 1)
PAPER_MAX_TOKENS = 1_501  # observed (time, variable) cells of the longest training record (counted on the data at
#                           P.QUANTIZATION; 438 on average): the plan's padded length (romae.compendium.plan)
# the scorings, the headline one (LEAD) first
NORMS = {"zscore": "z-score", "zscore_inliers": "z-score, gross outliers unscored", "minmax": "min-max"}
LEAD = "zscore"  # the paper's protocol (every hidden value scored, as HeTVAE's evaluate_hetvae): paper_values.csv
# each scoring: (the scaling it divides by, whether hidden values *recorded* outside the training split's
# 0.1 %-99.95 % quantiles of their variable (HeTVAE's anomaly bounds; winsorised to them) are left out)
SCORINGS = {"zscore": ("zscore", False), "zscore_inliers": ("zscore", True), "minmax": ("minmax", False)}
BOUND_QUANTILES = (0.001, 0.9995)  # HeTVAE's filter_anomalies thresholds (get_mimiciii_data, src/utils.py)
CATEGORICAL_MAX = 10  # a variable with at most this many distinct values is a code: not clipped (HeTVAE: not scaled)
GROSS_Z = 100.0  # a recorded value this many z-score units from its variable's mean is a gross recording error
UNITS = {"token": "token mask", "timepoint": "time-point mask"}
BASELINES = ("training mean", "record mean", "linear interpolation")
METHODS = ("RoMAE", "RoMAE, raw time") + BASELINES  # the order of tables and figures
# how a method's rows are named: setting(norm, unit) + this suffix (RoMAE's rows carry none)
SUFFIX = {"RoMAE": "", "RoMAE, raw time": ", RoMAE with raw time (control)",
          **{b: f", baseline: {b}" for b in BASELINES}}
TRIVIAL = "training mean"  # the trivial predictor RoMAE must beat (`report.learned`)


def published() -> dict[str, float]:
    """The published PhysioNet MSEs (HeTVAE and the paper's three RoMAE values), from peer_values.csv."""
    return {f"{r['model']}": r["value"] for r in peer_values(EXPERIMENT) if r["benchmark"] == "PhysioNet"}


def setting(norm: str, unit: str, method: str = "RoMAE") -> str:
    """The results.csv setting of one (normalisation, masking unit) and method, e.g. 'PhysioNet, z-score, token
    mask' (RoMAE) or 'PhysioNet, z-score, token mask, baseline: linear interpolation'."""
    return f"PhysioNet, {NORMS[norm]}, {UNITS[unit]}{SUFFIX[method]}"


@dataclass(frozen=True)
class RunConfig:
    """One RoMAE model. Defaults: Table 21 (RoMAE-tiny + [CLS], AdamW lr 1e-4, wd 0.01, batch 16, 200 epochs,
    warm-up 100, clip 1, cosine) with App. A.1's tiny-shallow decoder and the paper's 50 % token mask."""

    encoder: str = "tiny"
    decoder: str = "tiny-shallow"
    epochs: int = 200
    batch_size: int = 16
    lr: float = 1e-4
    warmup_steps: int = 100
    weight_decay: float = 0.01
    grad_clip: float | None = 1.0
    seed: int = 0
    scaling: str = "zscore"  # the values the model sees (it is scored on both scales)
    time_scale: float = 2880.0  # positions: time in [0, 1] x this (2880 = minutes over 48 h); 1 = the paper's
    train_unit: str = "token"  # masks during training: token (App. D.9) | timepoint (HeTVAE)
    max_train_records: int | None = None  # None = all 6,400
    length_buckets: int = 0  # > 0: batches of records of similar length (TrainConfig.length_buckets)
    progress: bool = True

    def train_config(self) -> TrainConfig:
        return TrainConfig(epochs=self.epochs, batch_size=self.batch_size, lr=self.lr, warmup_steps=self.warmup_steps,
                           weight_decay=self.weight_decay, grad_clip=self.grad_clip, seed=self.seed,
                           progress=self.progress, length_buckets=self.length_buckets, log_every=25)

    def model_config(self) -> RoMAEConfig:
        return RoMAEConfig(token_dim=1, n_axes=2, encoder=size(self.encoder), decoder=size(self.decoder),
                           use_cls=True, mask_ratio=0.5)


@dataclass(frozen=True)
class Profile:
    run: RunConfig = RunConfig()
    control: RunConfig | None = None  # the same model with raw positions (time_scale 1), or None
    quantization: float = P.QUANTIZATION
    mask_draws: int = 5  # seeded evaluation masks per unit (the std of the table is over these)
    max_test_records: int | None = None
    eval_batch: int = 32


PROFILES = {
    "paper": Profile(control=RunConfig(time_scale=1.0)),
    # fitted to ~30 min on this 2-core CPU (measured in notebook 16's committed run): a 2-block encoder,
    # 3 epochs over all 6,400 training records, lr 1e-3 with 10 % warm-up
    "quick": Profile(run=RunConfig(encoder="tiny-shallow", epochs=4, lr=1e-3, warmup_steps=160, length_buckets=50),
                     control=RunConfig(encoder="tiny-shallow", epochs=4, lr=1e-3, warmup_steps=160, length_buckets=50,
                                       time_scale=1.0)),
    # seconds: 200 training and 100 test records, a few steps, one mask draw
    "smoke": Profile(run=RunConfig(encoder="tiny-shallow", epochs=1, warmup_steps=2, max_train_records=200,
                                   progress=False),
                     control=None, mask_draws=1, max_test_records=100),
}


def paper_trainings() -> list[plan.Training]:
    """Notebook 16's paper trainings (`romae.compendium.plan`): RoMAE and its raw-time control on the 6,400 training records."""
    prof = config("paper")
    runs = [prof.run] + ([prof.control] if prof.control is not None else [])
    return [plan.Training(f"physionet, time x {r.time_scale:g}", "pretrain", r.model_config(), r.train_config(),
                          PAPER_MAX_TOKENS, PAPER_TRAIN_RECORDS, padded=True, source="mTAN's split of set-a + set-b")
            for r in runs]


def config(profile: str) -> Profile:
    """The settings of a profile (smoke | quick | paper); raises ValueError on an unknown name."""
    return PROFILES[check_profile(profile)]


def data_needs(profile: str = "smoke", **_params) -> list[Need]:
    """What the notebook needs under the data root (every profile: the records of set-a and set-b)."""
    check_profile(profile)
    return [Need(("physionet2012",), "PhysioNet 2012 set-a and set-b (8,000 records, 13 MB)")]


# ----------------------------------------------------------------------------- data

def dry_records() -> pd.DataFrame:
    """A dry run's records where the archives are absent (`runtime.DRY_LABEL`): 40 generated records of the
    benchmark's shape, 41 variables over 48 h, every eighth with the longest training record's PAPER_MAX_TOKENS
    cells, the others 50-800 (438 on average in the data). Not data."""
    return P.generate(40, lengths=(50, 800), longest=PAPER_MAX_TOKENS)


def prepare(prof: Profile, root=None, cache_dir=None, generated: bool = False) -> dict:
    """Long tables of the split (raw values, time in [0, 1] as `t`), and both scalings fitted on train.
    generated: a dry run without the archives: `dry_records` instead of the records (`source` says which)."""
    df = dry_records() if generated else P.records(root, quantization=prof.quantization, cache_dir=cache_dir)
    train_ids, test_ids = P.split(df.record_id)
    train_ids, test_ids = np.sort(train_ids), np.sort(test_ids)
    if runtime.dry_run():  # a few records, the longest training record among them (the paper's padded length)
        longest = df[df.record_id.isin(train_ids)].groupby("record_id").size().idxmax()
        train_ids = np.union1d([longest], train_ids[: runtime.dry_count(len(train_ids)) - 1])
        test_ids = test_ids[: runtime.dry_count(len(test_ids), at_most=8)]  # x 2 units x 2 draws x 2 models
    if prof.run.max_train_records:
        train_ids = train_ids[: prof.run.max_train_records]
    if prof.max_test_records:
        test_ids = test_ids[: prof.max_test_records]
    parts = {}
    for name, ids in (("train", train_ids), ("test", test_ids)):
        d = df[df.record_id.isin(ids)].reset_index(drop=True)
        parts[name] = d.assign(t=d.time / d.time.max())  # mTAN: each split's times / its largest time
    tr = parts["train"]
    # statistics of the recorded values (HeTVAE's trimmed z-score, mTAN's min-max), then the gross errors clipped
    scalings = {m: P.Scaling.fit(m, tr.variable.to_numpy(), tr.value.to_numpy()) for m in P.Scaling.METHODS}
    bounds = anomaly_bounds(tr.variable.to_numpy(), tr.value.to_numpy())
    parts = {name: winsorise(d, bounds) for name, d in parts.items()}
    tr = parts["train"]
    freq = tr.groupby("variable").size().reindex(range(len(P.VARIABLES)), fill_value=0)
    return dict(**parts, scalings=scalings, bounds=bounds, source=runtime.DRY_LABEL if generated else
                "PhysioNet 2012 set-a + set-b", train_mean=tr.groupby("variable").value.mean()
                .reindex(range(len(P.VARIABLES))).to_numpy(), obs_per_record=(freq / len(train_ids)).to_numpy())


def anomaly_bounds(variable, value, n_variables: int = len(P.VARIABLES)) -> np.ndarray:
    """HeTVAE's anomaly bounds per variable, [2, n_variables] (low, high): the BOUND_QUANTILES of the variable's
    training values (`filter_anomalies` in reml-lab/hetvae src/utils.py). -inf / +inf for a variable never
    observed, or one with at most CATEGORICAL_MAX distinct values (a code such as Gender -1/0/1, which HeTVAE's
    z-score leaves unscaled and which is not to be clipped)."""
    variable, value = np.asarray(variable), np.asarray(value, dtype=np.float64)
    bounds = np.stack([np.full(n_variables, -np.inf), np.full(n_variables, np.inf)])
    for j in range(n_variables):
        x = value[variable == j]
        if len(np.unique(x)) > CATEGORICAL_MAX:
            bounds[:, j] = np.quantile(x, BOUND_QUANTILES)
    return bounds


def winsorise(df: pd.DataFrame, bounds: np.ndarray) -> pd.DataFrame:
    """`df` with `value` clipped to its variable's `bounds` ([2, n_variables], `anomaly_bounds`) and the value as
    recorded kept in `raw`; every method sees, and is scored on, `value`."""
    raw = df["raw"].to_numpy() if "raw" in df else df.value.to_numpy()
    var = df.variable.to_numpy()
    return df.assign(raw=raw, value=np.clip(raw, bounds[0, var], bounds[1, var]))


def hidden_rows(df: pd.DataFrame, unit: str, seed: int, keep: float = 0.5) -> np.ndarray:
    """Evaluation mask over the rows of a long table: True = hidden (scored). Per record, floor(n * keep)
    of its n observed tokens (unit 'token') or of its observed time points (unit 'timepoint') stay
    visible, at least one; draws depend on (seed, record id) only, not on which other records are present."""
    if unit not in UNITS:
        raise ValueError(f"unknown masking unit {unit!r}; choose one of {list(UNITS)}")
    key_cols = ["record_id"] if unit == "token" else ["record_id", "time"]
    units = df[key_cols] if unit == "token" else df[key_cols].drop_duplicates()
    rid = units.record_id.to_numpy()
    if len(rid) and (np.diff(rid) < 0).any():
        raise ValueError("the table must be sorted by record_id")
    starts = np.flatnonzero(np.r_[True, rid[1:] != rid[:-1]]) if len(rid) else np.array([], int)
    ends = np.r_[starts[1:], len(rid)]
    hide = np.zeros(len(rid), dtype=bool)
    for s, e in zip(starts, ends):  # a generator per record, seeded by (seed, record id)
        rank = np.random.default_rng([seed, int(rid[s])]).random(e - s).argsort().argsort()
        hide[s:e] = rank >= max(math.floor((e - s) * keep), 1)
    if unit == "token":
        return hide
    merged = df[key_cols].merge(units.assign(_h=hide), on=key_cols, how="left", validate="many_to_one")
    return merged._h.to_numpy(bool)


# ----------------------------------------------------------------------------- baselines

def baseline_predictions(df: pd.DataFrame, hidden: np.ndarray, train_mean: np.ndarray) -> dict[str, np.ndarray]:
    """Predictions (raw units) of the three baselines at the hidden rows of `df`, in row order."""
    vis, hid = df[~hidden], df[hidden]
    fallback = train_mean[hid.variable.to_numpy()]
    out = {"training mean": fallback.copy()}
    rec_mean = vis.groupby(["record_id", "variable"]).value.mean()
    idx = pd.MultiIndex.from_arrays([hid.record_id, hid.variable])
    rm = rec_mean.reindex(idx).to_numpy()
    out["record mean"] = np.where(np.isnan(rm), fallback, rm)
    lin = fallback.copy()
    groups = {k: (g.time.to_numpy(), g.value.to_numpy()) for k, g in vis.groupby(["record_id", "variable"])}
    hpos = np.arange(len(hid))
    for k, g in pd.Series(hpos).groupby([hid.record_id.to_numpy(), hid.variable.to_numpy()]):
        if k in groups:
            t, v = groups[k]
            lin[g.to_numpy()] = np.interp(hid.time.to_numpy()[g.to_numpy()], t, v)  # nearest at the edges
    out["linear interpolation"] = lin
    return out


def scores(pred: np.ndarray, true: np.ndarray, variable: np.ndarray, scaling: P.Scaling) -> tuple[float, np.ndarray,
                                                                                               np.ndarray]:
    """Pooled MSE on `scaling`'s scale, and per-variable sums of squared errors and counts."""
    err = ((pred - true) / scaling.scale[variable]) ** 2
    n_var = len(scaling.scale)
    return float(err.mean()), np.bincount(variable, err, n_var), np.bincount(variable, minlength=n_var)


# ----------------------------------------------------------------------------- RoMAE

def tokens(df: pd.DataFrame, scaling: P.Scaling, time_scale: float):
    """Long table -> TokenDataset: scalar tokens (values on `scaling`), positions (t x time_scale, variable)."""
    d = df.assign(v=scaling.transform(df.variable.to_numpy(), df.value.to_numpy()))
    return from_long(d, id="record_id", time="t", variable="variable", value="v", standardize=False,
                     time_scale=time_scale, variables=list(range(len(P.VARIABLES))))


def train_transform(unit: str):
    """The training batches' transform: trim common padding; for 'timepoint', HeTVAE's time-point masks."""
    if unit == "token":
        return trim_padding  # the model draws its 50 % token mask itself
    if unit != "timepoint":
        raise ValueError(f"unknown masking unit {unit!r}; choose one of {list(UNITS)}")

    def transform(batch):
        batch = trim_padding(batch)
        hidden = keep_groups(batch["positions"][:, 0], batch["pad_mask"], 0.5)
        return equalize(batch, hidden)

    return transform


def train(prof: Profile, run: RunConfig, data: dict, cache_dir=None, refresh=False, checkpoints=True,
          profile: str = "") -> dict:
    train_ds = tokens(data["train"], data["scalings"][run.scaling], run.time_scale)
    train_cfg = plan.fit_memory(run.train_config(), run.model_config(), train_ds.tensors["values"].shape[1], "pretrain",
                                profile, padded=plan.is_padded(train_ds))  # paper: the planned micro-batch
    key = dict(data="physionet2012", quantization=prof.quantization, scaling=run.scaling, time_scale=run.time_scale,
               train_unit=run.train_unit, max_train_records=run.max_train_records, transform="trim_padding+v1",
               values=f"winsorised at the {BOUND_QUANTILES} training quantiles")
    return fit_cached("physionet_model", RoMAEForPreTraining, run.model_config(), train_ds, train_cfg, key,
                      seed=run.seed, cache_dir=cache_dir, refresh=refresh, checkpoints=checkpoints,
                      transform=train_transform(run.train_unit))


@torch.no_grad()
def model_predictions(model: RoMAEForPreTraining, ds, hidden: np.ndarray, batch: int = 32) -> np.ndarray:
    """RoMAE's predictions (on its training scale) at the hidden rows, in the long table's row order.

    Records are batched by length (shortest first) so a batch carries little padding; each batch is cut to
    its longest record and equalised (`romae.masking.equalize`) to one hidden count."""
    model.eval()
    pad = ds.tensors["pad_mask"]
    mask = torch.zeros_like(pad)
    mask[~pad] = torch.tensor(np.asarray(hidden, dtype=bool))
    full = torch.zeros(pad.shape)
    order = (~pad).sum(1).argsort()
    for i in range(0, len(order), batch):
        idx = order[i: i + batch]
        b = trim_padding(dict(values=ds.tensors["values"][idx], positions=ds.tensors["positions"][idx],
                              pad_mask=pad[idx]))
        n = b["pad_mask"].shape[1]
        h = mask[idx, :n]
        e = equalize(b, h)
        pred, _ = model(e["values"], e["positions"], mask=e["mask"], pad_mask=e["pad_mask"])
        rec = torch.zeros(e["mask"].shape)
        rec[e["mask"]] = pred.reshape(-1).float()
        full[idx, :n] = torch.where(h, rec[:, :n], 0.0)
    return full[~pad].numpy()[hidden]


def _load(run: RunConfig, trained: dict) -> RoMAEForPreTraining:
    model = RoMAEForPreTraining(run.model_config())
    model.load_state_dict(trained["state_dict"])
    return model.eval()


def evaluate(prof: Profile, data: dict, models: dict[str, tuple[RunConfig, RoMAEForPreTraining]]) -> dict:
    """Every method on every (unit, draw), scored on both scales -> pooled MSE rows, per-variable errors
    (draw 0) and one example record's predictions (draw 0, token unit)."""
    test = data["test"]
    var, true, recorded = test.variable.to_numpy(), test.value.to_numpy(), test.raw.to_numpy()
    rows, per_var, example = [], [], None
    datasets = {name: tokens(test, data["scalings"][run.scaling], run.time_scale) for name, (run, _) in models.items()}
    for unit in UNITS:
        for draw in range(prof.mask_draws):
            hidden = hidden_rows(test, unit, seed=draw)
            preds = baseline_predictions(test, hidden, data["train_mean"])
            for name, (run, model) in models.items():
                z = model_predictions(model, datasets[name], hidden, prof.eval_batch)
                preds[name] = data["scalings"][run.scaling].inverse(var[hidden], z)
            t, v, raw = true[hidden], var[hidden], recorded[hidden]
            for method, p in preds.items():
                for norm, (scaling, inliers) in SCORINGS.items():
                    keep = ((raw >= data["bounds"][0, v]) & (raw <= data["bounds"][1, v])) if inliers else slice(None)
                    m, sse, cnt = scores(p[keep], t[keep], v[keep], data["scalings"][scaling])
                    rows.append(dict(method=method, norm=norm, unit=unit, draw=draw, mse=m, n_scored=int(cnt.sum())))
                    if draw == 0:
                        per_var.append(pd.DataFrame(dict(method=method, norm=norm, unit=unit, variable=list(P.VARIABLES),
                                                         sse=sse, n=cnt)))
            if draw == 0 and unit == "token":
                example = _example(test, hidden, preds)
    return dict(mse=pd.DataFrame(rows), per_variable=pd.concat(per_var, ignore_index=True), example=example)


def _example(test: pd.DataFrame, hidden: np.ndarray, preds: dict) -> dict:
    """The test record whose length is nearest the 90th percentile (a well-observed one): rows and predictions."""
    sizes = test.groupby("record_id").size()
    rid = int((sizes - sizes.quantile(0.9)).abs().idxmin())
    sel = (test.record_id == rid).to_numpy()
    rows = test[sel].assign(hidden=hidden[sel]).reset_index(drop=True)
    pos = np.flatnonzero(hidden)  # prediction index of each hidden row
    in_rec = sel[hidden]
    return dict(record_id=rid, rows=rows, preds={k: v[in_rec] for k, v in preds.items()}, hidden_pos=pos[in_rec])


# ----------------------------------------------------------------------------- the loss spikes, replayed

def training_order(lengths, cfg: TrainConfig):
    """The batches `romae.train.fit` draws on one process, replayed without training: yields (step, sample
    indices) for steps 1, 2, ...; epoch e shuffles with seed cfg.seed + e and, with cfg.length_buckets, batches
    records of similar length (`romae.feeding.bucketed`), as fit does. lengths: tokens per sample, in dataset order."""
    lengths = torch.tensor(np.asarray(lengths))
    n, bs = len(lengths), cfg.batch_size
    steps_per_epoch = math.ceil(n / bs)
    for epoch in range(cfg.epochs):
        gen = torch.Generator().manual_seed(cfg.seed + epoch)
        perm = torch.randperm(n, generator=gen)
        if cfg.length_buckets:
            perm = bucketed(perm, lengths, bs, cfg.length_buckets, gen)
        for b in range(steps_per_epoch):
            yield epoch * steps_per_epoch + b + 1, perm[b * bs: (b + 1) * bs].numpy()


def batch_extremes(data: dict, run: RunConfig) -> pd.DataFrame:
    """One row per training step of `run` on `data["train"]` (`training_order`; no training): the batch's most
    extreme recorded value (its record, variable, value and z-score on `run.scaling`, `z_recorded`), the largest
    |z| among the values the model is given (`max_z_trained`, after `winsorise`), and the batch's mean squared z,
    recorded and as trained: the loss of predicting the variable's mean at every token, which a spike's size
    follows. `logged`: the history row whose loss (the mean over `log_every` steps) holds the step."""
    tr, sc, cfg = data["train"], data["scalings"][run.scaling], run.train_config()
    ids = np.sort(tr.record_id.unique())  # the dataset's sample order (`from_long`: sorted ids)
    pos = np.searchsorted(ids, tr.record_id.to_numpy())
    var = tr.variable.to_numpy()
    n = np.bincount(pos, minlength=len(ids))
    per = {}
    for name, col in (("recorded", "raw"), ("trained", "value")):
        z = sc.transform(var, tr[col].to_numpy())
        az = pd.Series(np.abs(z))
        top = az.groupby(pos).idxmax().reindex(range(len(ids))).to_numpy()  # the row of each record's largest |z|
        per[name] = dict(z=z, top=top, max=np.abs(z[top]), sum2=np.bincount(pos, z ** 2, len(ids)))
    total = cfg.epochs * math.ceil(len(ids) / cfg.batch_size)
    rows = []
    for step, idx in training_order(n, cfg):
        rec, tra = per["recorded"], per["trained"]
        row = rec["top"][idx[np.argmax(rec["max"][idx])]]
        rows.append(dict(step=step, logged=min(math.ceil(step / cfg.log_every) * cfg.log_every, total),
                         record_id=int(ids[pos[row]]), variable=P.VARIABLES[var[row]],
                         recorded=float(tr.raw.iloc[row]), z_recorded=float(rec["z"][row]),
                         max_z_trained=float(tra["max"][idx].max()),
                         mean_z2_recorded=float(rec["sum2"][idx].sum() / n[idx].sum()),
                         mean_z2_trained=float(tra["sum2"][idx].sum() / n[idx].sum())))
    return pd.DataFrame(rows)


def gross_batches(res: dict) -> pd.DataFrame:
    """The training batches holding a gross recording error (a recorded |z| > GROSS_Z), most extreme first."""
    b = res["batches"]
    return b[b.z_recorded.abs() > GROSS_Z].sort_values("z_recorded", key=np.abs, ascending=False,
                                                       kind="stable").reset_index(drop=True)


def spike_text(res: dict) -> str:
    """What the replayed batches say about the loss spikes, and what winsorising leaves (generated text)."""
    b, run = res["batches"], res["runs"]["RoMAE"]
    g = gross_batches(res)
    med = b.mean_z2_recorded.median()
    lines = [f"- Replayed ({len(b)} steps of `{res['profile_name']}`, seed {run.seed}, length buckets "
             f"{run.length_buckets}; no training): "]
    if g.empty:
        lines[0] += f"no training batch holds a recorded value with |z| > {GROSS_Z:g}."
    else:
        recs = g.groupby(["record_id", "variable"], sort=False).agg(value=("recorded", "first"),
                                                                   z=("z_recorded", "first"))
        worst = ", ".join(f"{r} ({v} {x.value:g}, z = {x.z:,.0f})" for (r, v), x in recs.head(4).iterrows())
        lines[0] += (f"{len(g)} of the {len(b)} training batches hold a recorded value with |z| > {GROSS_Z:g}, from "
                     f"{len(recs)} record(s): {worst}{', ...' if len(recs) > 4 else ''}. Their batches' mean squared "
                     f"z reaches {g.mean_z2_recorded.max():,.0f}, against a median of {med:.2f} over all batches: "
                     f"a loss spike of that order whenever the model's mask hides the value. They fall into "
                     f"{g.logged.nunique()} of the {b.logged.nunique()} logged loss windows (steps "
                     f"{', '.join(str(s) for s in sorted(g.logged.unique()))}).")
    worst_t = b.max_z_trained.max()
    lines.append(f"- As trained (winsorised at the anomaly bounds): the largest |z| of any training value is "
                 f"{worst_t:.1f}, the largest batch mean squared z {b.mean_z2_trained.max():.2f} "
                 f"({b.mean_z2_trained.max() / b.mean_z2_trained.median():.1f}x the median batch's).")
    for name, flag in res.get("flags", {}).items():
        lines.append(f"- {name}'s training loss: " + (f"still flagged ({flag})." if flag else
                                                      "no loss spike or divergence flagged."))
    return "\n".join(lines)


# ----------------------------------------------------------------------------- the experiment

def run(profile: str = "smoke", reports_dir=None, data_root=None, cache_dir=None, refresh: bool = False,
        checkpoints: bool | None = None) -> dict:
    """Prepare the data, train (cached), evaluate every method, record rows, save the tables."""
    prof = config(profile)
    checkpoints = profile != "smoke" if checkpoints is None else checkpoints
    if runtime.dry_run():  # two mask draws: the std over draws is still computed
        prof = dataclasses.replace(prof, mask_draws=runtime.dry_count(prof.mask_draws, at_most=2))
    generated = runtime.dry_run() and not P.present(data_root)  # a dry run without the data: generated records
    if generated:
        print(f"PhysioNet 2012 is not under the data root; {runtime.DRY_LABEL}")
    else:
        require(data_needs(profile), data_root)  # DataMissing with the fetch command, before any work
    data = prepare(prof, data_root, cache_dir, generated)
    runs = {"RoMAE": prof.run} | ({"RoMAE, raw time": prof.control} if prof.control is not None else {})
    batches = batch_extremes(data, prof.run)  # the training batches, replayed (the control draws the same ones)
    trained = {name: train(prof, r, data, cache_dir, refresh, checkpoints, profile) for name, r in runs.items()}
    models = {name: (runs[name], _load(runs[name], t)) for name, t in trained.items()}
    key = dict(prof=dataclasses.asdict(prof), runs={k: t["run_id"] for k, t in trained.items()}, v=2)
    ev = cached("physionet_eval", key, lambda: evaluate(prof, data, models), cache_dir=cache_dir, refresh=refresh)

    summary = ordered(ev["mse"].groupby(["method", "norm", "unit"]).mse.agg(["mean", "std", "count"]).reset_index()
                      .rename(columns={"count": "mask_draws"}))
    summary["n_models"] = [int(m in runs) for m in summary.method]  # trained models behind the row
    n_train, n_test = data["train"].record_id.nunique(), data["test"].record_id.nunique()
    generated = data["source"] == runtime.DRY_LABEL
    flags = {name: report.loss_flags(loss_curve(t["history"])) for name, t in trained.items()}
    excluded = unscored(ev["mse"])
    means = summary.set_index(["method", "norm", "unit"])["mean"]
    for row in summary.itertuples():
        method = row.method
        draws = ((f"one trained model (seed {runs[method].seed})" if method in runs else "no training")
                 + f", scored on {row.mask_draws} seeded evaluation mask draw(s) (mean +- std over the draws)")
        score = scoring_note(row.norm, excluded) + (f"; {runtime.DRY_LABEL}" if generated else "")
        if method in runs:
            r = runs[method]
            note = (f"{'RoMAE' if method == 'RoMAE' else 'control: RoMAE with raw time'}, {r.encoder} encoder + "
                    f"{r.decoder} decoder with [CLS], trained on {NORMS[r.scaling]} values with "
                    f"{UNITS[r.train_unit]}s, batch {r.batch_size}, lr {r.lr:g}; {draws}; {score}")
            extra = dict(scale=scale_of(r, n_train, n_test, generated), losses=loss_curve(trained[method]["history"]),
                         learned=report.learned(row.mean, means[TRIVIAL, row.norm, row.unit],
                                                trivial="the training mean of each variable"))
        else:
            note = f"baseline ({method}); {draws}; {score}"
            extra = dict(scale=scale_of(None, n_train, n_test, generated))
        std = None if not math.isfinite(row.std) else float(row.std)
        record(EXPERIMENT, setting(row.norm, row.unit, method), "mse", float(row.mean), ours_std=std,
               n_seeds=int(row.n_models), profile=profile, note=note, reports_dir=reports_dir, **extra)
    table = summary.assign(setting=[setting(n, u) for n, u in zip(summary.norm, summary.unit)],
                           source=[f"this run ({profile}; {m} trained model(s), {d} mask draws)"
                                   for m, d in zip(summary.n_models, summary.mask_draws)])
    table = table.rename(columns={"mean": "value"})
    peers = pd.DataFrame(peer_values(EXPERIMENT))
    peers = peers[peers.benchmark.str.startswith("PhysioNet")].rename(columns={"benchmark": "setting",
                                                                              "model": "method"})
    full = pd.concat([peers[["setting", "method", "metric", "value", "std", "source"]],
                      table.assign(metric="mse")[["setting", "method", "metric", "value", "std", "source"]]],
                     ignore_index=True)
    save_table(full, "table7_physionet", reports_dir)
    return dict(profile=prof, data=data, trained=trained, runs=runs, eval=ev, summary=summary, table=full,
                profile_name=profile, flags=flags, scale=scale_of(prof.run, n_train, n_test, generated),
                batches=batches)


def ordered(summary: pd.DataFrame) -> pd.DataFrame:
    """Rows in reading order: the headline scoring first (NORMS), token mask first, RoMAE before the others."""
    rank = {col: {v: i for i, v in enumerate(order)}
            for col, order in (("norm", NORMS), ("unit", UNITS), ("method", METHODS))}
    return summary.sort_values(["norm", "unit", "method"], key=lambda c: c.map(rank[c.name]).fillna(len(rank[c.name])),
                               kind="stable").reset_index(drop=True)


def scale_of(run: RunConfig | None, n_train: int, n_test: int, generated: bool = False) -> dict:
    """A row's facts beside the paper's (`report.scale`): for a RoMAE run (`run`) its epochs, trained models,
    model and positions against the `paper` profile's Table 21 (seeds: not stated in the paper) and App. D.9's
    raw positions; for a baseline (`run` None) only the records it used."""
    fields = dict(data=(f"{n_train} train / {n_test} test records",
                        f"{PAPER_TRAIN_RECORDS} train / {PAPER_TEST_RECORDS} test records"))
    if generated:
        fields["dataset"] = ("generated records (dry run)", "PhysioNet 2012 set-a + set-b")
    if run is not None:
        paper = PROFILES["paper"].run
        fields.update(epochs=(run.epochs, paper.epochs), seeds=(1, None),
                      model=(f"{run.encoder} encoder + {run.decoder} decoder",
                             f"{paper.encoder} encoder + {paper.decoder} decoder"),
                      positions=(f"t x {run.time_scale:g}", PAPER_POSITIONS))
    return report.scale(**fields)


loss_curve = report.loss_curve  # a history's logged training losses


def unscored(mse: pd.DataFrame) -> float:
    """The share of hidden values the 'gross outliers unscored' scoring leaves out (recorded outside HeTVAE's
    anomaly bounds), over every draw and unit."""
    n = mse[mse.method == mse.method.iloc[0]].groupby("norm").n_scored.sum()
    return float(1 - n["zscore_inliers"] / n["zscore"]) if len(n) and n.get("zscore", 0) else 0.0


def scoring_note(norm: str, excluded: float) -> str:
    """How a scoring scores, for a row's note."""
    values = "values winsorised at HeTVAE's anomaly bounds (0.1 %/99.95 % training quantiles per variable)"
    if norm == "zscore_inliers":
        return (f"{values}; scored on the z-score without the hidden values recorded beyond the bounds "
                f"({100 * excluded:.2f} % of the hidden values)")
    if norm == "zscore":
        return (f"{values}; every hidden value scored on the z-score (the paper's protocol, HeTVAE's "
                "evaluate_hetvae)")
    return f"{values}; every hidden value scored on mTAN's min-max scale"


def wide(res: dict) -> pd.DataFrame:
    """Mean MSE as a grid: rows = method, columns = (normalisation, masking unit)."""
    s = res["summary"]
    grid = s.pivot_table(index="method", columns=["norm", "unit"], values="mean", sort=False)
    return grid.reindex(index=[m for m in METHODS if m in grid.index]).round(4)


def conclusion(res: dict) -> str:
    """What the measurements say about the published values' scale and masking unit (generated text)."""
    s = res["summary"].set_index(["method", "norm", "unit"])["mean"]
    lines, pub = [], published()
    pub_lo, pub_hi = min(pub.values()), max(pub.values())
    # a scale fits the published values unless they exceed 3x the MSE of predicting the training mean there
    plausible = [n for n in NORMS if pub_lo <= 3 * max(s["training mean", n, u] for u in UNITS)]
    for norm in NORMS:
        trivial = min(s["training mean", norm, u] for u in UNITS)
        best = min(s[m, norm, u] for m in s.index.get_level_values(0).unique() for u in UNITS)
        if norm not in plausible:
            verdict = (f"the published values ({pub_lo:.3f}-{pub_hi:.3f}) are over 3x the MSE of predicting the "
                       f"training mean ({trivial:.4f}): they cannot be on this scale")
        else:
            verdict = (f"the published values ({pub_lo:.3f}-{pub_hi:.3f}) lie in the range of the methods measured "
                       f"here ({best:.3f} best, {trivial:.3f} for the training mean): this scale fits them")
        lines.append(f"- {NORMS[norm]}: {verdict}.")
    lin = "linear interpolation"
    lines.append(gross_error_text(res))
    flag = res.get("flags", {}).get("RoMAE", "")
    learned = ("RoMAE" in s.index.get_level_values(0)
               and report.learned(s["RoMAE", LEAD, "token"], s[TRIVIAL, LEAD, "token"], TRIVIAL)["ok"])
    if flag:
        lines.append(f"- RoMAE's training is flagged ({flag}): no conclusion is drawn from its numbers.")
    elif "RoMAE" in s.index.get_level_values(0) and not learned:
        lines.append(f"- RoMAE did not learn: on the headline scoring ({NORMS[LEAD]}, token mask) its MSE "
                     f"{s['RoMAE', LEAD, 'token']:.4g} is not at most {report.LEARN_FACTOR:g} x the training mean's "
                     f"{s[TRIVIAL, LEAD, 'token']:.4g}; no conclusion is drawn from its numbers.")
    elif "RoMAE" in s.index.get_level_values(0):
        ours = ", ".join(f"{s['RoMAE', LEAD, u]:.3f} ({UNITS[u]})" for u in UNITS)
        lines.append(f"- On the scoring of the paper's protocol ({NORMS[LEAD]}, every hidden value) RoMAE scores "
                     f"{ours}; published: " + ", ".join(f"{k} {v:.3f}" for k, v in pub.items()) + ".")
        for norm in NORMS:
            for unit in UNITS:
                r, li = s["RoMAE", norm, unit], s[lin, norm, unit]
                lines.append(f"- {NORMS[norm]}, {UNITS[unit]}: RoMAE {r:.4g} {'beats' if r < li else 'does not beat'} "
                             f"linear interpolation {li:.4g} ({100 * (li - r) / li:+.1f} %; one trained model, the "
                             "same masks for both).")
    return "\n".join(lines)


def gross_outliers(res: dict, n: int = 8, split: str = "test") -> pd.DataFrame:
    """The recorded values of `split` farthest from their variable's training statistics (in z-score units), with
    the value every method sees and is scored on after `winsorise`, and what each would add to the pooled z-score
    MSE if hidden, recorded and winsorised (one hidden value among about half the split's cells)."""
    d, sc = res["data"][split], res["data"]["scalings"]["zscore"]
    var = d.variable.to_numpy()
    z = sc.transform(var, d.raw.to_numpy())
    top = np.argsort(-np.abs(z), kind="stable")[:n]
    zw = sc.transform(var[top], d.value.to_numpy()[top])
    out = d.iloc[top][["record_id", "time", "variable", "raw", "value"]].rename(
        columns={"raw": "recorded", "value": "winsorised"}).assign(z_recorded=z[top], z_winsorised=zw)
    out["variable"] = [P.VARIABLES[v] for v in out.variable]
    out["added_if_hidden_recorded"] = z[top] ** 2 / (len(d) / 2)
    out["added_if_hidden_winsorised"] = zw ** 2 / (len(d) / 2)
    return out.reset_index(drop=True)


def gross_error_text(res: dict) -> str:
    """How much the treatment of the gross recording errors moves the headline MSE (generated text): linear
    interpolation (token mask) with every hidden value scored against with those recorded beyond the bounds
    left out, each with its std over mask draws."""
    s = res["summary"].set_index(["method", "norm", "unit"])
    lin = "linear interpolation"
    a, b = s.loc[(lin, "zscore", "token")], s.loc[(lin, "zscore_inliers", "token")]
    sd = max(np.nan_to_num(a["std"]), np.nan_to_num(b["std"]))
    gap = abs(a["mean"] - b["mean"])
    # the two agree when they differ by less than 2 std over mask draws or 5 % of the headline value
    agree = gap <= max(2 * sd, 0.05 * abs(a["mean"]))
    worst = gross_outliers(res, n=1)
    head = (f"- Gross recording errors (winsorised at the anomaly bounds; the largest recorded in the test split: "
            f"{worst.variable[0]} {worst.recorded[0]:g}, z = {worst.z_recorded[0]:,.0f}, scored as "
            f"{worst.winsorised[0]:g}): linear interpolation scores {a['mean']:.3f}"
            + (f" +- {a['std']:.3f}" if np.isfinite(a["std"]) else "") + f" with every hidden value, "
            f"{b['mean']:.3f}" + (f" +- {b['std']:.3f}" if np.isfinite(b["std"]) else "")
            + " with the values recorded beyond the bounds unscored (token mask)")
    return head + (": their treatment does not move the result." if agree else
                   f": their treatment moves the result by {gap:.3f}, more than the mask draws do.")


# ----------------------------------------------------------------------------- figures

def title_tag(res: dict) -> str:
    """'quick profile, reduced, positions rescaled': the profile and the qualifiers of RoMAE's scale facts."""
    return report.title_tag(res["profile_name"], res["scale"])


# one style per published value (colour, line style, end marker), so no two are drawn alike even where the values
# nearly coincide (0.562, 0.567, 0.570); each line ends at its own height in its marker and is named in the legend
PUBLISHED_STYLES = {"HeTVAE": ("tab:gray", "--", "s"),
                    "RoMAE-tiny (paper's Discussion)": ("black", "-", "v"),
                    "RoMAE-tiny (paper's Table 7 cell)": ("tab:purple", "-.", "D"),
                    "RoMAE-tiny (third-party summary)": ("tab:brown", ":", "o")}
_SPARE_STYLES = (("tab:olive", (0, (5, 1)), "^"), ("tab:cyan", (0, (3, 1, 1, 1, 1, 1)), "P"),
                 ("tab:pink", (0, (1, 3)), "X"))


def published_styles(models) -> dict[str, tuple]:
    """model -> (colour, line style, marker): PUBLISHED_STYLES, then an unused spare for any other model."""
    spare = [st for st in _SPARE_STYLES if st not in PUBLISHED_STYLES.values()]
    out = {}
    for m in models:
        out[m] = PUBLISHED_STYLES.get(m) or (spare.pop(0) if spare else ("0.4", (0, (2, 2 + len(out))), "."))
    return out


def plot_methods(res: dict):
    """Table 7, PhysioNet: every method's MSE (mean +- std over mask draws) on each scoring, the headline one
    first; token mask filled, time-point mask open. On the z-score panels each published value is a vertical line
    of its own colour and style (`published_styles`), named with its value in the legend; on min-max they lie far
    off the axis."""
    s = res["summary"]
    pub = pd.DataFrame(peer_values(EXPERIMENT))
    pub = pub[pub.benchmark == "PhysioNet"]
    norms = [n for n in NORMS if n in set(s.norm)]
    fig, axes = plt.subplots(1, len(norms), figsize=(5 * len(norms), 3.6), squeeze=False, sharey=True)
    methods = [m for m in METHODS if m in set(s.method)]
    y = np.arange(len(methods))[::-1]
    for ax, norm in zip(axes[0], norms):
        for k, (unit, mfc) in enumerate((("token", None), ("timepoint", "none"))):
            g = s[(s.norm == norm) & (s.unit == unit)].set_index("method").reindex(methods)
            ax.errorbar(g["mean"], y + (0.12 if k == 0 else -0.12), xerr=g["std"].fillna(0), fmt="o", mfc=mfc,
                        color="tab:blue", ecolor="0.5", capsize=3, label=UNITS[unit])
        xlabel = "MSE on the hidden values"
        if norm == "minmax":  # said under the axis, not over the data
            xlabel += f"\n(the published {pub.value.min():.3f}-{pub.value.max():.3f} lie far off this axis)"
        else:
            styles = published_styles(pub.model)
            for k, r in enumerate(pub.itertuples()):  # from the axis up to its own height, over the methods
                color, ls, marker = styles[r.model]
                ax.plot([r.value, r.value], [0, 0.97 - 0.05 * k], color=color, ls=ls, lw=1.3, marker=marker, ms=5,
                        markevery=[1], transform=ax.get_xaxis_transform(), label=f"published: {r.model} {r.value:.3f}")
            ax.set_xlim(left=0)
        ax.set(title=("headline: " if norm == LEAD else "") + NORMS[norm], xlabel=xlabel)
    # headroom over the top method for the published lines' end markers (shared y axis)
    axes[0, 0].set(yticks=y, yticklabels=methods, ylim=(-0.5, len(methods) + 0.4))
    handles, labels = axes[0, 0].get_legend_handles_labels()  # the headline panel: markers and published lines
    fig.legend(handles, labels, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3)
    fig.suptitle(f"PhysioNet interpolation, every method on every scoring ({title_tag(res)})")
    fig.tight_layout()
    return fig


def plot_record(res: dict, n_vars: int = 4, method: str = "RoMAE"):
    """One test record: visible, hidden and predicted values of its most observed variables (token mask)."""
    ex = res["eval"]["example"]
    rows, preds = ex["rows"], ex["preds"]
    hid = rows[rows.hidden].assign(**{k: v for k, v in preds.items()})
    counts = hid.variable.value_counts()
    top = [v for v in rows.variable.value_counts().index if v in counts.index and v >= len(P.DESCRIPTORS)][:n_vars]
    fig, axes = plt.subplots(len(top), 1, figsize=(10, 2.2 * len(top)), sharex=True, squeeze=False)
    for ax, v in zip(axes[:, 0], top):
        r, h = rows[(rows.variable == v) & ~rows.hidden], hid[hid.variable == v]
        ax.plot(r.time, r.value, "o", color="tab:red", ms=4, label="visible")
        ax.plot(h.time, h.value, "x", color="black", ms=5, label="hidden (true)")
        if method in h:
            ax.plot(h.time, h[method], "o", mfc="none", color="tab:blue", ms=6, label=method)
        ax.plot(h.time, h["linear interpolation"], "+", color="tab:green", ms=6, label="linear interpolation")
        ax.set_ylabel(P.VARIABLES[v])
    axes[0, 0].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the data, not on it
    axes[-1, 0].set_xlabel("hours since ICU admission")
    fig.suptitle(f"test record {ex['record_id']}: half of the observed values hidden ({title_tag(res)})")
    fig.tight_layout()
    return fig


def plot_per_variable(res: dict, norm: str = "zscore", unit: str = "token"):
    """MSE per variable against how often it is observed (observations per training record)."""
    pv = res["eval"]["per_variable"]
    pv = pv[(pv.norm == norm) & (pv.unit == unit) & (pv.n > 0)].assign(mse=lambda d: d.sse / d.n)
    freq = pd.Series(res["data"]["obs_per_record"], index=list(P.VARIABLES))
    fig, ax = plt.subplots(figsize=(9, 5))
    for method, g in pv.groupby("method", sort=False):
        ax.plot(freq[g.variable].to_numpy(), g.mse, "o", alpha=0.75, label=method)
    ax.set(xscale="log", yscale="log", xlabel="observations per training record (log)",
           ylabel=f"MSE on hidden values ({NORMS[norm]}, log)",
           title=f"per-variable MSE, {UNITS[unit]} ({title_tag(res)})")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def plot_learning_curves(res: dict):
    """Training loss of every RoMAE run against step (the raw-time control beside the main run); ticks under the
    curves mark the logged steps whose batches hold a recorded gross error (|z| > GROSS_Z, `gross_batches`),
    which the runs see winsorised: a spike there would be one the preprocessing missed."""
    fig, ax = plt.subplots(figsize=(9, 4))
    for name, t in res["trained"].items():
        h = pd.DataFrame(t["history"])
        h = h[h.get("loss").notna()] if "loss" in h else h
        flag = res.get("flags", {}).get(name)
        ax.plot(h.step, h.loss, label=name + (" (TRAINING FLAG)" if flag else ""))
    if "batches" in res and len(g := gross_batches(res)):
        steps = np.sort(g.logged.unique())
        ax.plot(steps, np.full(len(steps), 0.03), "|", color="tab:red", ms=10, transform=ax.get_xaxis_transform(),
                label=f"a batch with a recorded\n|z| > {GROSS_Z:g} (winsorised)")
    ax.set(xlabel="step", ylabel="training loss (MSE on hidden tokens,\nz-score units, winsorised)", yscale="log",
           title=f"PhysioNet: training loss ({title_tag(res)})")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the curves, not over them
    fig.tight_layout()
    return fig
