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
DROPOUT_AT = ("authors", "paper")  # EncoderConfig.dropout_at: the MLP's dropout on its output | its hidden layer


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


def check_whole(owner: str, name: str, value: Any, minimum: int = 0, none: bool = False) -> int | None:
    """`value` as an int if it is a whole number >= minimum (None too if `none`), else a ValueError naming
    `owner.name` and the value (True/False, 2.5, "3", inf are refused)."""
    if value is None and none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or int(value) != value or value < minimum:
        raise ValueError(f"{owner}.{name} must be a whole number >= {minimum}{' (or None)' if none else ''}, "
                         f"got {value!r}{'' if isinstance(value, int) or not hasattr(value, '__index__') else f' (a {type(value).__module__}.{type(value).__name__}, not a Python int or float)'}")
    return int(value)


def check_number(owner: str, name: str, value: Any, low: float = -math.inf, high: float = math.inf, *,
                 low_open: bool = False, high_open: bool = False, none: bool = False, infinite: bool = False,
                 meaning: str = "") -> float | None:
    """`value` as a float if it is a finite number in the interval (an infinite one only if `infinite`), else
    a ValueError naming `owner.name`, the interval and the value."""
    if value is None and none:
        return None
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and not math.isnan(value) \
        and (infinite or math.isfinite(value)) and (value > low if low_open else value >= low) \
        and (value < high if high_open else value <= high)
    if not ok:
        closed_high = not high_open and (infinite or math.isfinite(high))
        interval = f"{'(' if low_open or math.isinf(low) else '['}{low:g}, {high:g}{']' if closed_high else ')'}"
        raise ValueError(f"{owner}.{name} must be a {'' if infinite else 'finite '}number in {interval}"
                         f"{' (or None)' if none else ''}{meaning}, got {value!r}")
    return float(value)


def check_flag(owner: str, name: str, value: Any) -> bool:
    """`value` if it is True or False, else a ValueError naming `owner.name` ("no", 0 and 1 are refused)."""
    if not isinstance(value, bool):
        raise ValueError(f"{owner}.{name} must be True or False, got {value!r}")
    return value


@dataclass
class EncoderConfig:
    """One transformer stack (encoder or decoder). Defaults: RoMAE-tiny (Table 8); `size(name)` gives the others.

    Pre-norm blocks (RMSNorm -> multi-head self-attention, rotary when pos_encoding is a RoPE -> RMSNorm ->
    SiLU MLP), each branch added back through stochastic depth. Block parameters: `block_params()`.

    Attributes:
        d_model: width of every token inside the stack (int >= 1; Table 8: 180 tiny, 432 small, 720 base).
            Must be divisible by n_heads; with RoPE, d_model / n_heads must split into n_axes even chunks.
        n_heads: attention heads (int >= 1); each head has head_dim = d_model / n_heads channels.
        depth: number of transformer blocks (int >= 1; 12 in Table 8, 2 for "tiny-shallow").
        d_ff: hidden width of each block's MLP (int >= 1); None (default) = 4 * d_model, filled in at
            construction, so a built config always holds a number.
        dropout: probability in [0, 1) applied to the attention probabilities and, per `dropout_at`, in the
            MLP; 0 = none (the paper's pre-training).
        dropout_at: where the MLP's dropout goes: "authors" (default; on the MLP's output, as the authors'
            code) or "paper" (on its hidden layer, as App. A.2 describes).
        drop_path: stochastic depth rate lambda in [0, 1): block l of N (0-based) is dropped with
            probability lambda * l / (N - 1), as the authors' code (App. A.2 writes lambda * m / N).
        norm_eps: epsilon of every RMSNorm, > 0 (1e-12 in the authors' code).
    """

    d_model: int = 180  # Table 8
    n_heads: int = 3  # Table 8
    depth: int = 12  # Table 8
    d_ff: int | None = None  # MLP width; None = 4 * d_model (Table 8, authors' code)
    dropout: float = 0.0  # on the attention probabilities and (dropout_at) the MLP output or hidden layer
    dropout_at: str = "authors"  # "authors": MLP output (the authors' code); "paper": MLP hidden layer (App. A.2)
    drop_path: float = 0.0  # stochastic depth: block l of N at lambda*l/(N-1), authors' code (deviation: App. A.2 lambda*m/N)
    norm_eps: float = 1e-12  # RMSNorm epsilon (authors' code)

    def __post_init__(self):
        me = "EncoderConfig"
        for name in ("d_model", "n_heads", "depth"):
            setattr(self, name, check_whole(me, name, getattr(self, name), 1))
        if self.d_ff is None:
            self.d_ff = 4 * self.d_model
        self.d_ff = check_whole(me, "d_ff", self.d_ff, 1, none=True)
        self.dropout = check_number(me, "dropout", self.dropout, 0, 1, high_open=True)
        if self.dropout_at not in DROPOUT_AT:
            raise ValueError(f"{me}.dropout_at must be one of {DROPOUT_AT} (where the MLP's dropout goes: its output, "
                             f"as the authors' code, or its hidden layer, as App. A.2), got {self.dropout_at!r}")
        self.drop_path = check_number(me, "drop_path", self.drop_path, 0, 1, high_open=True)
        self.norm_eps = check_number(me, "norm_eps", self.norm_eps, 0, low_open=True,
                                     meaning=" (RMSNorm's epsilon; 1e-12 in the authors' code)")
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
    """A RoMAE model: input tokens, positions, encoder, optional decoder and head.

    One config serves both models: `RoMAEForPreTraining` uses the decoder and the pre-training fields
    (mask_ratio, normalize_targets, loss_counts_padding, mask_token_init); `RoMAEForPrediction` uses the
    head, task and output fields. Inputs are values [B, N, token_dim], positions [B, n_axes, N] (raw,
    real-valued, in the data's own units: no rescaling) and pad_mask [B, N]. Validated on construction;
    `head` None is resolved to "cls" or "mean" then.

    Attributes:
        token_dim: values per token (int >= 1): prod(patch_size) * channels (n_p in the paper); the
            channels of one time step for `from_sequences`, the value columns for `from_long`.
        n_axes: positional axes D (int >= 1); positions are [B, n_axes, N] (e.g. 1 for a time series, 2
            for (time, variable) or an image grid).
        encoder: the encoder stack, an EncoderConfig (or its dict); default RoMAE-tiny (Table 8).
        decoder: the pre-training decoder stack, an EncoderConfig (or its dict); default "tiny-shallow"
            (App. A.1). Unused by RoMAEForPrediction.
        pos_encoding: how positions enter the model, one of POS_ENCODINGS: "rope" (default; continuous
            axial p-RoPE on queries and keys, Sec. 3.1), "rope_quantized" (the same with positions rounded
            to integers, Table 9's ablation), "absolute" (1-D sin/cos table over the token's index, the
            authors' baseline; see max_len), "absolute_nd" (sin/cos of each axis's real position added to
            the embedding; d_model divisible by 2 * n_axes), "none" (no positional information).
        p: p-RoPE fraction in [0, 1] of each axis's rotation pairs that turn (the highest frequencies);
            the rest are not rotated (0.75, the authors' code; 1 = plain RoPE).
        rope_base: RoPE's base b > 0, theta_k = b^(-2k / axis_dim) (10000, Sec. 3.1). Positions are in the
            data's units, so it sets which scales of position the model can tell apart.
        use_cls: prepend a learned [CLS] token at the origin (0 on every axis) of each sample (Sec. 4);
            needed by head="cls".
        max_len: rows of the "absolute" sin/cos table (int >= 1, 1500 in the authors' code): the most
            tokens (with [CLS]) a sample may have under pos_encoding="absolute"; unused otherwise.
        mask_ratio: pre-training: the share in (0, 1) of each sample's tokens hidden when the batch brings
            no mask (0.75, Sec. 3).
        normalize_targets: pre-training: standardise each hidden target token over its own values before
            the MSE (MAE's norm-pix loss, App. D); False = raw values.
        loss_counts_padding: pre-training: False (ours) averages the MSE over real hidden tokens only;
            True reproduces the authors' mean, which also counts padded entries (bug 4).
        head: prediction head, one of HEADS: "cls" (the [CLS] token's output), "mean" (mean over real,
            non-padded tokens), "tokens" (one output per non-[CLS] token, outputs [B, N, n_outputs]);
            None = "cls" with use_cls, else "mean" (App. A.2).
        n_outputs: outputs of the head (int >= 1): the number of classes, or of regression targets.
        task: "classification" (cross-entropy on integer class indices, or on class probabilities) or
            "regression" (MSE on float targets, in the targets' own units: nothing standardises them).
        label_smoothing: cross-entropy label smoothing epsilon in [0, 1) (PyTorch's); the paper's
            confidence c (App. A.2) is 1 - epsilon.
        head_dropout: dropout probability in [0, 1) before the head's RMSNorm (the authors' code); also the
            pre-training reconstruction head's.
        class_weights: cross-entropy weight per class (n_outputs finite numbers >= 0, not all 0;
            classification only; the authors' ELAsTiCC code); None = unweighted.
        init: weight initialisation: None (as the authors: PyTorch's defaults for pre-training, truncated
            normal std 0.02 with zero biases for prediction), "default" (PyTorch's for both) or
            "trunc_normal" (truncated normal for both).
        mask_token_init: pre-training's learned [MASK] token: "zeros" (the authors'; located only by its
            RoPE position) or "normal" (MAE's N(0, 0.02), facebookresearch/mae); independent of `init`.
    """

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
        me = "RoMAEConfig"
        if isinstance(self.encoder, dict):
            self.encoder = EncoderConfig(**self.encoder)
        if isinstance(self.decoder, dict):
            self.decoder = EncoderConfig(**self.decoder)
        for name in ("encoder", "decoder"):
            if not isinstance(getattr(self, name), EncoderConfig):
                raise ValueError(f"{me}.{name} must be an EncoderConfig (e.g. romae.size('tiny')) or its dict, got "
                                 f"{type(getattr(self, name)).__name__}")
        self.token_dim = check_whole(me, "token_dim", self.token_dim, 1)
        self.n_axes = check_whole(me, "n_axes", self.n_axes, 1)
        self.max_len = check_whole(me, "max_len", self.max_len, 1)
        for name in ("use_cls", "normalize_targets", "loss_counts_padding"):
            check_flag(me, name, getattr(self, name))
        self.head_dropout = check_number(me, "head_dropout", self.head_dropout, 0, 1, high_open=True)
        if self.pos_encoding not in POS_ENCODINGS:
            raise ValueError(f"unknown pos_encoding {self.pos_encoding!r}; choose one of {POS_ENCODINGS}")
        if self.head is None:
            self.head = "cls" if self.use_cls else "mean"
        if self.head not in HEADS:
            raise ValueError(f"unknown head {self.head!r}; choose one of {HEADS}")
        if self.task not in ("classification", "regression"):
            raise ValueError(f"unknown task {self.task!r}; choose 'classification' or 'regression'")
        self.label_smoothing = check_number(me, "label_smoothing", self.label_smoothing, 0, 1, high_open=True)
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
        self.p = check_number(me, "p", self.p, 0, 1, meaning=" (p-RoPE: the fraction of rotation pairs kept)")
        self.rope_base = check_number(me, "rope_base", self.rope_base, 0, low_open=True,
                                      meaning=" (theta_k = base^(-2k / axis_dim); 10000 in the paper; else positions "
                                              "would have no effect)")
        self.n_outputs = check_whole(me, "n_outputs", self.n_outputs, 1)  # classes or regression targets
        self.mask_ratio = check_number(me, "mask_ratio", self.mask_ratio, 0, 1, low_open=True, high_open=True,
                                       meaning=": some tokens hidden, some visible")
        if self.head == "cls" and not self.use_cls:
            raise ValueError("head='cls' needs use_cls=True; use head='mean' without a [CLS] token")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "RoMAEConfig":
        return cls(**d)


@dataclass
class TrainConfig:
    """One training run of `romae.train.fit` (Sec. D of the appendix gives per-experiment values). Defaults: Table 17.

    The schedule spans steps_per_epoch * epochs optimiser steps, steps_per_epoch = ceil(len(data) /
    (batch_size * processes)): linear warm-up to `lr`, then cosine decay to 0 at the last step
    (`romae.train.lr_at`). Validated on construction.

    Attributes:
        epochs: passes over the training data (int >= 1).
        batch_size: samples per optimiser step and process (int >= 1); the global batch is batch_size *
            number of processes.
        lr: peak learning rate (> 0), reached at the end of the warm-up (Table 17: 5e-4).
        optimizer: "adamw" (AdamW, eps 1e-8) or "sgd" (with momentum); one parameter group for all
            parameters, as the authors (weight decay also applies to norms, biases and [CLS]).
        betas: AdamW's (beta1, beta2), each in [0, 1) (Table 17: 0.9, 0.999); ignored by SGD.
        momentum: SGD's momentum in [0, 1) (Tables 12, 16); ignored by AdamW.
        weight_decay: weight decay >= 0 (AdamW's decoupled, SGD's L2), on every parameter.
        warmup_steps: linear warm-up length in optimiser steps (int >= 0); None (default) =
            DEFAULT_WARMUP_FRACTION (10 %) of the run's steps. Experiments set their table's value (e.g.
            625 for Table 17). Ignored when warmup_fraction is set.
        warmup_fraction: warm-up as a share in [0, 1) of all the run's steps (Tables 12, 13, 18 give %);
            when set it replaces warmup_steps. See `warmup(total_steps)`.
        grad_clip: clip the global gradient norm to this value (> 0); None or inf = no clipping ("inf"
            in Table 17).
        bf16: train under bf16 autocast (App. A.2 "AMP"); False = FP32, as most paper runs. A precision
            named for the whole process (ROMAE_PRECISION, `romae.runtime`) overrides it.
        seed: seeds torch, numpy and random when training starts, and each epoch's shuffle (seed +
            epoch): the masks, dropout and data order; whole number in [0, 2**32) (42, the authors' default).
            The model's initial weights are drawn when it is built: pass `seed=` to its constructor
            (`RoMAEForPreTraining(cfg, seed=0)`, `from_pretrained(..., seed=0)`); `pretrain_finetune`'s
            seed fixes both.
        eval_every: validate on val_data every N optimiser steps (int >= 1); None = at the end of each
            epoch. The last step is always validated.
        checkpoint_every: with an out_dir, save a checkpoint every N optimiser steps as well (int >= 1), for
            resuming a run cut short; None = only at the end (or where max_steps stops it).
        log_every: write a history row (mean loss and gradient norm since the last row, lr, seconds) every
            N optimiser steps (int >= 1); the last step is always logged.
        progress: show progress (main process only): a tqdm bar on a terminal, a plain line every 5 % of the run
            (or every minute) where stderr is a log, a notebook's stream or a pipe (`romae.progress`).
        micro_batch: gradient accumulation: each process's batch goes through in forwards of this many
            samples (int >= 1) whose gradients add up to the whole batch's, the loss normalised over the
            whole batch's real tokens, so the update equals one big forward's up to rounding; None = one
            forward per batch. Changes memory use, not what is learnt.
        processes: the process count the run was planned for (int >= 1): fit refuses to run under another
            (its batch and step count assume it); None = any.
        length_buckets: 0 (default) = batches drawn uniformly at random; k > 0 = each epoch's shuffled
            order is cut into windows of k batches, each window sorted by length (real tokens, from
            pad_mask) and cut into batches, whose order is shuffled: batches of similar length, so that
            with padding trimmed per batch (`romae.masking.trim_padding`) padded data costs less. Needs a
            dataset with a pad_mask; every sample is still seen once per epoch (`romae.feeding.bucketed`).
        compile: torch.compile the training steps (`romae.train.compile_model`); the first step compiles
            (its time is a history row); results equal up to float rounding; pays for fixed shapes
            (varying lengths recompile).
        cuda_graphs: replay each training step from a CUDA graph (`romae.graphs`): one launch per step instead
            of ~60 kernel launches per block, which is most of a step's time for RoMAE's narrow models on a GPU.
            None (default) = on where it applies (one CUDA process, no micro_batch, no compile, AdamW), off on
            the CPU; True = required (an error where it cannot apply); False = eager steps. Equal to eager steps
            up to float rounding (the learning rate is read from a float32 tensor), except that a `trim_padding`
            transform then cuts batches to a few lengths (`romae.masking.bucket_lengths`), so a random mask is drawn
            over some padded columns too; not part of a result's key (the history's `cuda_graphs` row says it ran).
    """

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
    progress: bool = True  # a bar on a terminal, plain lines elsewhere (romae.progress)
    micro_batch: int | None = None  # per process: the batch goes through in forwards of this many samples whose
    #                                 gradients add up to the whole batch's (gradient accumulation; the loss is
    #                                 normalised over the whole batch's real tokens); None = one forward
    processes: int | None = None  # the process count the run was planned for: fit refuses another (None: any)
    length_buckets: int = 0  # > 0: batches of similar length (padded data; see romae.train.fit), 0 = uniform
    compile: bool = False  # torch.compile the training steps (romae.train.compile_model); the first step
    #                        compiles (its time is a history row); results equal up to float rounding;
    #                        pays for fixed shapes (varying lengths recompile)
    cuda_graphs: bool | None = None  # steps replayed from CUDA graphs (romae.graphs); None: on CUDA where it applies

    def __post_init__(self):
        me = "TrainConfig"
        if self.optimizer not in ("adamw", "sgd"):
            raise ValueError(f"unknown optimizer {self.optimizer!r}; choose 'adamw' or 'sgd'")
        self.epochs = check_whole(me, "epochs", self.epochs, 1)
        self.batch_size = check_whole(me, "batch_size", self.batch_size, 1)
        self.lr = check_number(me, "lr", self.lr, 0, low_open=True, meaning=" (the peak learning rate)")
        if isinstance(self.betas, (str, bytes)) or not hasattr(self.betas, "__len__") or len(self.betas) != 2:
            raise ValueError(f"{me}.betas must be two numbers in [0, 1) (AdamW's), got {self.betas!r}")
        self.betas = tuple(check_number(me, "betas", b, 0, 1, high_open=True) for b in self.betas)
        self.momentum = check_number(me, "momentum", self.momentum, 0, 1, high_open=True)
        self.weight_decay = check_number(me, "weight_decay", self.weight_decay, 0)
        self.grad_clip = check_number(me, "grad_clip", self.grad_clip, 0, low_open=True, none=True, infinite=True,
                                      meaning=" (the largest gradient norm; None or inf: no clipping)")
        for name in ("bf16", "progress", "compile"):
            check_flag(me, name, getattr(self, name))
        if self.cuda_graphs is not None:
            check_flag(me, "cuda_graphs", self.cuda_graphs)
        self.seed = check_whole(me, "seed", self.seed, 0)
        if self.seed >= 2 ** 32:
            raise ValueError(f"{me}.seed must be below 2**32 (numpy's limit), got {self.seed}")
        self.log_every = check_whole(me, "log_every", self.log_every, 1)
        self.eval_every = check_whole(me, "eval_every", self.eval_every, 1, none=True)
        self.checkpoint_every = check_whole(me, "checkpoint_every", self.checkpoint_every, 1, none=True)
        self.length_buckets = check_whole(me, "length_buckets", self.length_buckets, 0)
        self.warmup_steps = check_whole(me, "warmup_steps", self.warmup_steps, 0, none=True)
        self.warmup_fraction = check_number(me, "warmup_fraction", self.warmup_fraction, 0, 1, high_open=True,
                                            none=True)
        for name in ("micro_batch", "processes"):
            setattr(self, name, check_whole(me, name, getattr(self, name), 1, none=True))

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
