"""The shared protocol: the frequencies, the profiles and the control."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ...compendium import plan
from ...config import RoMAEConfig, TrainConfig, check_profile, size
from ...data.sines import SineConfig


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
