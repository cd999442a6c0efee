"""The shared protocol: the paper's sizes, the normalisations and scorings compared, the profiles."""

from __future__ import annotations

from dataclasses import dataclass

from ...compendium import plan
from ...config import RoMAEConfig, TrainConfig, check_profile, size
from ...data import physionet as P
from ...data.catalog import Need
from ...compendium.reference import peer_values


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
