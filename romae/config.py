"""Commented configuration dataclasses, the paper's model sizes (Table 8) and the run profiles.

Every default is the paper's (or, where the paper is silent, the authors' code's) value, with its
provenance in a comment. Profiles shrink runs; they never change what a default means. Nothing here is
read from environment variables: a run is fully described by the dataclasses it was given, and the
resolved config is saved beside every checkpoint and result.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any

PROFILES = ("smoke", "quick", "paper")  # seconds on CI | reduced CPU run | the paper's settings
DEFAULT_WARMUP_FRACTION = 0.1  # TrainConfig's warm-up when none is given: 10 % of the run's real steps
POS_ENCODINGS = ("rope", "rope_quantized", "absolute", "absolute_nd", "none")
HEADS = ("cls", "mean", "tokens")


def check_profile(profile: str) -> str:
    """Return `profile` if it is a known profile name, else raise a ValueError naming the choices."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    return profile


def as_list(value: Any, what: str = "value") -> list[str]:
    """A list parameter as given by a notebook, papermill or the command line -> a list of strings.

    Accepts a list or tuple of strings, a comma-separated string ("BasicMotions,Epilepsy"), or the text of a
    list ('["BasicMotions"]', what papermill's `-p name value` passes on); None or "" -> []. Anything
    else is a ValueError naming `what` and the value."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                raise ValueError(f"{what}: cannot read {value!r} as a list; give names separated by commas") from None
        else:
            return [v.strip() for v in text.split(",") if v.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value if v.strip()]
    raise ValueError(f"{what} must be a list of names or a comma-separated string, got {value!r}")


@dataclass
class EncoderConfig:
    """One transformer stack (encoder or decoder). Defaults: RoMAE-tiny (Table 8)."""

    d_model: int = 180  # Table 8
    n_heads: int = 3  # Table 8
    depth: int = 12  # Table 8
    d_ff: int | None = None  # MLP width; None = 4 * d_model (Table 8, authors' code)
    dropout: float = 0.0  # on attention probabilities and the MLP output (authors' code; App. A.2 differs)
    drop_path: float = 0.0  # stochastic depth: block l of N at lambda*l/(N-1), authors' code (deviation: App. A.2 lambda*m/N)
    norm_eps: float = 1e-12  # RMSNorm epsilon (authors' code)

    def __post_init__(self):
        if self.d_ff is None:
            self.d_ff = 4 * self.d_model
        for name in ("d_model", "n_heads", "depth", "d_ff"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def block_params(self) -> int:
        """Parameters of the blocks alone (what Table 8 counts): 4 d^2 + 2 d d_ff + 2 d per block."""
        d = self.d_model
        return self.depth * (4 * d * d + 2 * d * self.d_ff + 2 * d)


# Table 8 of the paper (App. A.1). `pendulum` is Table 14's custom size (60/2/2/30).
SIZES: dict[str, dict[str, int]] = {
    "tiny-shallow": dict(d_model=180, n_heads=3, depth=2, d_ff=720),
    "tiny": dict(d_model=180, n_heads=3, depth=12, d_ff=720),
    "small": dict(d_model=432, n_heads=6, depth=12, d_ff=1728),
    "base": dict(d_model=720, n_heads=12, depth=12, d_ff=2880),
    "pendulum": dict(d_model=60, n_heads=2, depth=2, d_ff=30),
}


def size(name: str, **overrides: Any) -> EncoderConfig:
    """EncoderConfig of a named size (Table 8), with optional field overrides (dropout, drop_path, ...)."""
    if name not in SIZES:
        raise ValueError(f"unknown model size {name!r}; choose one of {', '.join(SIZES)}")
    return EncoderConfig(**{**SIZES[name], **overrides})


@dataclass
class RoMAEConfig:
    """A RoMAE model: input tokens, positions, encoder, optional decoder and head."""

    token_dim: int  # values per token = prod(patch_size) * channels (n_p in the paper)
    n_axes: int = 1  # positional axes D; positions are [B, n_axes, N]
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    decoder: EncoderConfig = field(default_factory=lambda: size("tiny-shallow"))  # App. A.1
    pos_encoding: str = "rope"  # one of POS_ENCODINGS; "rope" = continuous axial p-RoPE (Sec. 3.1)
    p: float = 0.75  # p-RoPE: fraction of rotation pairs kept, the highest frequencies (authors' code)
    rope_base: float = 10000.0  # theta_k = base^(-2k / axis_dim) (Sec. 3.1)
    use_cls: bool = True  # prepend a learned [CLS] at the origin of every axis (Sec. 4)
    max_len: int = 1500  # rows of the 1-D absolute sin/cos table (authors' code)
    mask_ratio: float = 0.75  # pre-training: share of tokens hidden when no mask is given (Sec. 3)
    normalize_targets: bool = False  # MAE norm-pix loss: standardise each target patch (App. D)
    loss_counts_padding: bool = False  # True = authors' loss mean that counts padded entries (bug 4)
    head: str | None = None  # cls | mean (padding-aware) | tokens (one output per non-[CLS] token);
    #                          None: cls with a [CLS] token, else mean (App. A.2)
    n_outputs: int = 1  # classes or regression targets of the head
    task: str = "classification"  # classification (cross-entropy) | regression (MSE)
    label_smoothing: float = 0.0  # PyTorch's epsilon; the paper's confidence c (App. A.2) is 1 - epsilon
    head_dropout: float = 0.0  # dropout before the head's RMSNorm (authors' code)
    class_weights: tuple[float, ...] | None = None  # cross-entropy weight per class (the authors' ELAsTiCC
    #                                                 code); None = unweighted
    init: str | None = None  # None: as the authors (PyTorch default for pre-training,
    #                          truncated normal 0.02 for fine-tuning); or "default" | "trunc_normal"
    mask_token_init: str = "zeros"  # zeros: the authors'; "normal": MAE's N(0, 0.02) (facebookresearch/mae);
    #                                 pre-training only; independent of `init`

    def __post_init__(self):
        if isinstance(self.encoder, dict):
            self.encoder = EncoderConfig(**self.encoder)
        if isinstance(self.decoder, dict):
            self.decoder = EncoderConfig(**self.decoder)
        if self.pos_encoding not in POS_ENCODINGS:
            raise ValueError(f"unknown pos_encoding {self.pos_encoding!r}; choose one of {POS_ENCODINGS}")
        if self.head is None:
            self.head = "cls" if self.use_cls else "mean"
        if self.head not in HEADS:
            raise ValueError(f"unknown head {self.head!r}; choose one of {HEADS}")
        if self.task not in ("classification", "regression"):
            raise ValueError(f"unknown task {self.task!r}; choose 'classification' or 'regression'")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must lie in [0, 1), got {self.label_smoothing}")
        if self.class_weights is not None:
            self.class_weights = tuple(float(w) for w in self.class_weights)
            if not all(w >= 0 and w < float("inf") for w in self.class_weights) or not any(self.class_weights):
                raise ValueError(f"class_weights must be finite, >= 0 and not all 0, got {self.class_weights}")
            if len(self.class_weights) != self.n_outputs or self.task != "classification":
                raise ValueError(f"class_weights need a classification task with one weight per class: got "
                                 f"{len(self.class_weights)} weights for n_outputs={self.n_outputs} ({self.task})")
        if self.init not in (None, "default", "trunc_normal"):
            raise ValueError(f"unknown init {self.init!r}; choose None, 'default' or 'trunc_normal'")
        if self.mask_token_init not in ("zeros", "normal"):
            raise ValueError(f"unknown mask_token_init {self.mask_token_init!r}; choose 'zeros' (the authors') "
                             "or 'normal' (MAE's N(0, 0.02))")
        if not 0.0 <= self.p <= 1.0:
            raise ValueError(f"p-RoPE fraction p must lie in [0, 1], got {self.p}")
        if not (isinstance(self.rope_base, (int, float)) and math.isfinite(self.rope_base) and self.rope_base > 0):
            raise ValueError(f"rope_base must be a finite number > 0 (theta_k = base^(-2k / axis_dim); 10000 in the "
                             f"paper), got {self.rope_base!r}: positions would have no effect")
        if isinstance(self.n_outputs, bool) or int(self.n_outputs) != self.n_outputs or self.n_outputs < 1:
            raise ValueError(f"n_outputs must be a whole number >= 1 (classes or regression targets), got "
                             f"{self.n_outputs!r}")
        if self.token_dim < 1 or self.n_axes < 1:
            raise ValueError(f"token_dim and n_axes must be >= 1, got {self.token_dim}, {self.n_axes}")
        if not 0.0 < self.mask_ratio < 1.0:
            raise ValueError(f"mask_ratio must lie in (0, 1): some tokens hidden, some visible; got {self.mask_ratio}")
        if self.head == "cls" and not self.use_cls:
            raise ValueError("head='cls' needs use_cls=True; use head='mean' without a [CLS] token")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "RoMAEConfig":
        return cls(**d)


@dataclass
class TrainConfig:
    """One training run (Sec. D of the appendix gives per-experiment values). Defaults: Table 17."""

    epochs: int = 10  # Table 17
    batch_size: int = 64  # per process; global batch = batch_size * number of processes
    lr: float = 5e-4  # peak learning rate after warm-up (Table 17)
    optimizer: str = "adamw"  # adamw | sgd
    betas: tuple[float, float] = (0.9, 0.999)  # AdamW (Table 17)
    momentum: float = 0.9  # SGD only (Tables 12, 16)
    weight_decay: float = 0.01  # one parameter group for all parameters, as the authors
    warmup_steps: int | None = None  # linear warm-up from 0 to lr, then cosine to 0 at the last step; None:
    #                                  DEFAULT_WARMUP_FRACTION of the run's real steps (experiments set their
    #                                  table's value, e.g. 625 for Table 17)
    warmup_fraction: float | None = None  # warm-up as a share of all steps (Tables 12, 13, 18 give %);
    #                                       when set, it replaces warmup_steps
    grad_clip: float | None = None  # global gradient-norm clip; None = off ("inf" in Table 17)
    bf16: bool = False  # bf16 autocast (App. A.2 "AMP"); FP32 in most paper runs
    seed: int = 42  # seeds torch, numpy and random at the start of training (authors' default)
    eval_every: int | None = None  # validation every N optimizer steps (None = at each epoch's end)
    checkpoint_every: int | None = None  # checkpoint every N steps (None = only at the end)
    log_every: int = 10  # history row every N steps
    progress: bool = True  # tqdm progress bar
    micro_batch: int | None = None  # per process: the batch goes through in forwards of this many samples whose
    #                                 gradients add up to the whole batch's (gradient accumulation; the loss is
    #                                 normalised over the whole batch's real tokens); None = one forward
    processes: int | None = None  # the process count the run was planned for: fit refuses another (None: any)
    length_buckets: int = 0  # > 0: batches of similar length (padded data; see romae.train.fit), 0 = uniform
    compile: bool = False  # torch.compile the training steps (romae.train.compile_model); the first step
    #                        compiles (its time is a history row); results equal up to float rounding;
    #                        pays for fixed shapes (varying lengths recompile)

    def __post_init__(self):
        self.betas = tuple(self.betas)
        if self.optimizer not in ("adamw", "sgd"):
            raise ValueError(f"unknown optimizer {self.optimizer!r}; choose 'adamw' or 'sgd'")
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError(f"epochs and batch_size must be >= 1, got {self.epochs}, {self.batch_size}")
        if self.warmup_steps is not None and (isinstance(self.warmup_steps, bool) or int(self.warmup_steps) != self.warmup_steps
                                              or self.warmup_steps < 0):
            raise ValueError(f"warmup_steps must be a whole number >= 0 (or None: {DEFAULT_WARMUP_FRACTION:.0%} of the "
                             f"steps), got {self.warmup_steps!r}")
        if self.warmup_fraction is not None and not 0.0 <= self.warmup_fraction < 1.0:
            raise ValueError(f"warmup_fraction must lie in [0, 1), got {self.warmup_fraction}")
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr}")
        for name in ("micro_batch", "processes"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or int(value) != value or value < 1):
                raise ValueError(f"{name} must be a whole number >= 1 (or None), got {value!r}")
        if self.length_buckets < 0:
            raise ValueError(f"length_buckets must be >= 0, got {self.length_buckets}")

    def warmup(self, total_steps: int) -> int:
        """Warm-up steps of a run of `total_steps` optimiser steps: warmup_fraction of them if set, else
        warmup_steps if set, else DEFAULT_WARMUP_FRACTION of them."""
        if self.warmup_fraction is not None:
            return round(self.warmup_fraction * total_steps)
        if self.warmup_steps is not None:
            return int(self.warmup_steps)
        return round(DEFAULT_WARMUP_FRACTION * total_steps)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def to_json(obj: Any) -> str:
    """Stable JSON of a (nested) config dataclass or dict: used for saving and for cache keys."""
    if dataclasses.is_dataclass(obj):
        obj = dataclasses.asdict(obj)
    return json.dumps(obj, sort_keys=True, default=str)
