"""The shared protocol: Table 1's and Fig. 2's settings and the profiles."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...compendium import plan
from ...config import EncoderConfig, RoMAEConfig, TrainConfig, check_profile


EXPERIMENT = "table1_position_reconstruction"


FIG2 = "fig2_position_range"


# ----------------------------------------------------------------------------- configuration

@dataclass(frozen=True)
class SizeRun:
    """One model size of Table 1 and how long it trains (the same for the runs with and without [CLS])."""

    size: str  # row label of Table 1: tiny | small | base
    d_model: int  # 180 | 432 | 720 (Table 8 widths); depth, heads and FFN stay tiny's (App. D.5, authors' code)
    n_train: int = 20_000  # Sec. 5.1
    n_test: int = 4_000  # Sec. 5.1
    epochs: int = 10  # Table 17
    warmup_steps: int = 625  # Table 17 (authors: 20 % of the 3,130 steps)
    seeds: tuple[int, ...] = (42, 43, 44, 45, 46)  # authors' code; 5 seeds (App. D.5)
    depth: int = 12  # RoMAE-tiny (Table 8)


PAPER_SIZES = (SizeRun("tiny", 180), SizeRun("small", 432), SizeRun("base", 720))


@dataclass(frozen=True)
class Table1Config:
    """Sec. 5.1 / Table 17. Defaults = the `paper` profile."""

    sizes: tuple[SizeRun, ...] = PAPER_SIZES
    with_cls: tuple[bool, ...] = (True, False)  # Table 1's two columns
    n_tokens: int = 10  # Sec. 5.1
    low: float = 1.0  # authors' code: U(1, 50); the paper's text says "between 0 and 50"
    high: float = 50.0
    n_heads: int = 3  # RoMAE-tiny's heads for every d_model (authors' code)
    d_ff: int = 720  # feed-forward width fixed at tiny's for every d_model (authors' code)
    p: float = 0.75  # p-RoPE (Sec. 5.1)
    lr: float = 5e-4  # Table 17
    betas: tuple[float, float] = (0.9, 0.999)  # Table 17
    weight_decay: float = 0.01  # Table 17
    batch_size: int = 64  # Table 17
    grad_clip: float | None = None  # Table 17: "inf"
    bf16: bool = False  # Table 17: FP32
    train_seed: int = 0  # data seed of the training set (the authors' data were unseeded)
    test_seed: int = 1  # data seed of the test set
    eval_batch: int = 1000  # inference batch (no effect on the numbers)

    def model_config(self, run: SizeRun, use_cls: bool) -> RoMAEConfig:
        enc = EncoderConfig(d_model=run.d_model, n_heads=self.n_heads, depth=run.depth, d_ff=self.d_ff)
        return RoMAEConfig(token_dim=1, n_axes=1, encoder=enc, p=self.p, use_cls=use_cls, head="tokens",
                           task="regression", n_outputs=1)

    def train_config(self, run: SizeRun, seed: int, progress: bool = False) -> TrainConfig:
        return TrainConfig(epochs=run.epochs, batch_size=self.batch_size, lr=self.lr, optimizer="adamw",
                           betas=self.betas, weight_decay=self.weight_decay, warmup_steps=run.warmup_steps,
                           grad_clip=self.grad_clip, bf16=self.bf16, seed=seed, log_every=10,
                           progress=progress)


@dataclass(frozen=True)
class Fig2Config:
    """App. B.1 / Table 16. Defaults = the `paper` profile."""

    ranges: tuple[tuple[float, float], ...] = ((0.0, 100.0), (0.0, 1000.0))  # App. B.1
    lrs: tuple[float, ...] = (5e-6, 5e-7)  # Table 16, one per range
    d_model: int = 960  # App. D.5
    depth: int = 12  # RoMAE-tiny (App. D.5)
    n_heads: int = 3  # RoMAE-tiny (authors' code: head width 320)
    d_ff: int = 720  # authors' code
    p: float = 0.75  # authors' code
    n_train: int = 20_000  # authors' code
    n_test: int = 4_000  # authors' code (validation loss only)
    epochs: int = 10  # Table 16
    batch_size: int = 64  # Table 16
    warmup_steps: int = 625  # Table 16
    momentum: float = 0.9  # Table 16 (SGD)
    weight_decay: float = 0.0  # Table 16
    grad_clip: float | None = None  # Table 16: "inf"
    seeds: tuple[int, ...] = (40, 41, 42, 43, 44)  # authors' code
    train_seed: int = 40  # data seed (authors: torch seeded with 40 before drawing the data)
    test_seed: int = 41
    n_eval: int = 500  # evenly spaced evaluation positions, end points included (authors' code)

    def model_config(self) -> RoMAEConfig:
        enc = EncoderConfig(d_model=self.d_model, n_heads=self.n_heads, depth=self.depth, d_ff=self.d_ff)
        return RoMAEConfig(token_dim=1, n_axes=1, encoder=enc, p=self.p, use_cls=True, head="tokens",
                           task="regression", n_outputs=1)

    def train_config(self, lr: float, seed: int, progress: bool = False) -> TrainConfig:
        return TrainConfig(epochs=self.epochs, batch_size=self.batch_size, lr=lr, optimizer="sgd",
                           momentum=self.momentum, weight_decay=self.weight_decay,
                           warmup_steps=self.warmup_steps, grad_clip=self.grad_clip, seed=seed,
                           log_every=10, progress=progress)


@dataclass(frozen=True)
class PositionProfile:
    table1: Table1Config = field(default_factory=Table1Config)
    fig2: Fig2Config = field(default_factory=Fig2Config)


PROFILES = {
    # the paper's settings: 3 sizes x 2 x 5 seeds x 3,130 steps (Table 1); 2 ranges x 5 seeds x 3,130
    # steps of a 61 M-parameter encoder (Figure 2). A GPU job.
    "paper": PositionProfile(),
    # RoMAE-tiny at the paper's full scale (20,000 / 4,000 samples, 10 epochs, batch 64, 3,130 steps),
    # with and without [CLS], 1 seed (paper: 5): each run takes ~10 min on a 2-core CPU and quick's
    # budget is ~30 min per notebook; `paper` runs all 5 seeds. small and base reduced to 2,000 / 1,000
    # samples x 2
    # epochs (64 steps, warm-up 20 %), 1 seed; Figure 2 reduced to 2,000 samples x 5 epochs (160 steps,
    # warm-up 20 %), 1 seed, both ranges.
    "quick": PositionProfile(
        table1=Table1Config(sizes=(
            SizeRun("tiny", 180, seeds=(42,)),
            SizeRun("small", 432, n_train=2_000, n_test=1_000, epochs=2, warmup_steps=13, seeds=(42,)),
            SizeRun("base", 720, n_train=2_000, n_test=1_000, epochs=2, warmup_steps=13, seeds=(42,)))),
        fig2=Fig2Config(n_train=2_000, n_test=500, epochs=5, warmup_steps=32, seeds=(40,))),
    # seconds, for CI / nbval: tiny with 2 blocks, 256 samples x 1 epoch (4 steps), 1 seed; Figure 2
    # with the same 2-block tiny (d_model 180). Shows that the pipeline runs, nothing more.
    "smoke": PositionProfile(
        table1=Table1Config(sizes=(SizeRun("tiny", 180, n_train=256, n_test=128, epochs=1, warmup_steps=2,
                                           seeds=(42,), depth=2),)),
        fig2=Fig2Config(d_model=180, depth=2, n_train=256, n_test=64, epochs=1, warmup_steps=2, seeds=(40,))),
}


def config(profile: str) -> PositionProfile:
    """The settings of a profile (smoke | quick | paper); raises ValueError on an unknown name."""
    return PROFILES[check_profile(profile)]


def paper_trainings() -> list[plan.Training]:
    """Notebook 01's paper trainings (`romae.compendium.plan`): Table 1's sizes with and without [CLS], Figure 2's two ranges."""
    t1, f2 = config("paper").table1, config("paper").fig2
    return [plan.Training(f"table1 {setting_name(r.size, cls)}", "finetune", t1.model_config(r, cls),
                          t1.train_config(r, r.seeds[0]), t1.n_tokens, r.n_train, runs=len(r.seeds), source="Sec. 5.1")
            for r in t1.sizes for cls in t1.with_cls] + [
        plan.Training(f"fig2 positions U({lo:g}, {hi:g})", "finetune", f2.model_config(), f2.train_config(lr, f2.seeds[0]),
                      1, f2.n_train, runs=len(f2.seeds), source="App. B.1") for (lo, hi), lr in zip(f2.ranges, f2.lrs)]


def setting_name(size: str, use_cls: bool) -> str:
    """Table 1's setting label as in paper_values.csv, e.g. 'tiny, with [CLS]'."""
    return f"{size}, {'with' if use_cls else 'no'} [CLS]"
