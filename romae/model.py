"""RoMAE: a plain pre-norm transformer whose only notion of position is continuous axial p-RoPE.

Two models share one trunk (patch embedding, [CLS], encoder):

* `RoMAEForPreTraining`: the MAE flow. Visible tokens (+ [CLS]) go through the encoder; one learned
  [MASK] token is placed at every hidden position and, with RoPE, is located only by the rotary
  positions inside the decoder. Also used for interpolation (task-given masks).
* `RoMAEForPrediction`: classification or regression from the [CLS] token, a padding-aware mean, or
  one output per token.

Inputs are token lists: values [B, N, token_dim], positions [B, n_axes, N] (raw, real-valued; no
rescaling), pad_mask [B, N] (True = padding) and, for pre-training, mask [B, N] (True = hidden).
Every forward returns (output, loss), the contract of `romae.train.fit`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import numbers
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .config import EncoderConfig, RoMAEConfig
from . import masking
from .masking import _require, check_mask, gather_positions, gather_tokens, hidden_count, random_mask, split_indices
from .rope import RoPE, check_positions, rotate_qk_, sincos_1d, sincos_nd
from .kernels import ACCELERATOR, RMSNorm, _RMSNorm, attend  # noqa: F401 (_RMSNorm: imported from here before)
from .inputs import MAX_POSITION, _check_finite, _check_float32_merge, _refuse_complex  # noqa: F401 (re-exported)


def _reject_unknown(model: nn.Module, unknown: dict, accepted: tuple[str, ...]) -> None:
    """A batch key the model does not take is an error (a typo such as padding_mask= would otherwise
    silently drop the padding)."""
    if unknown:
        raise TypeError(f"{type(model).__name__} got unexpected batch key(s) {sorted(unknown)}; it accepts "
                        f"{', '.join(accepted)}")


def _wide(x: Tensor) -> Tensor:
    """Losses in float32 at least: bf16 / fp16 outputs are widened, float64 (tests) stays float64."""
    return x if x.dtype == torch.float64 else x.float()


def _finite_labels(labels: Tensor) -> None:
    """Refuse the first sample whose float labels are not finite (NaN would only show as a non-finite loss)."""
    flat = labels.reshape(labels.shape[0], -1)
    bad = ~torch.isfinite(flat).all(1)
    first = masking.first_true(bad)
    row = flat.index_select(0, first.reshape(1))[0]

    def error():
        v = row[~torch.isfinite(row)][0].item()
        return masking.BadSample(f"labels must be finite, found {v} for ", int(first), " (drop that sample, or give "
                                 "it a real target)")

    _require(~bad.any(), "labels must be finite", error=error)


# ----------------------------------------------------------------------------- building blocks

class DropPath(nn.Module):
    """Stochastic depth: zero a sample's residual branch with probability `rate`, rescale the rest."""

    def __init__(self, rate: float):
        super().__init__()
        self.rate = rate

    def forward(self, x: Tensor) -> Tensor:
        if self.rate == 0.0 or not self.training:
            return x
        keep = x.new_empty(x.shape[0], *[1] * (x.dim() - 1)).bernoulli_(1.0 - self.rate)
        return x * keep / (1.0 - self.rate)


class Attention(nn.Module):
    """Bias-free multi-head self-attention with RoPE on queries and keys (not values)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        self.n_heads, self.dropout = n_heads, dropout
        # the authors' bias-free q, k, v projections, with q and k fused into one matrix so that RoPE
        # rotates both in place in the projection's own output. Its rows are stored pair-interleaved
        # inside each axis chunk (rope.interleave_permutation): a fixed permutation of rotate-half,
        # shared by q and k, so q.k is unchanged and RoPE is one complex multiply
        self.qk = nn.Linear(d_model, 2 * d_model, bias=False)
        self.v = nn.Linear(d_model, d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x: Tensor, rot: Tensor | None, attn_mask: Tensor | None):
        """x: [B, N, D]; rot: phasors from RoPE.angles or None; attn_mask: [B, 1, 1, N] bool (True = attend)."""
        B, N, D = x.shape
        H = self.n_heads
        qk = self.qk(x)
        if rot is not None:  # q and k rotated where the projection wrote them (fresh tensor: in place)
            qk = rotate_qk_(qk, rot, H)
        q, k = qk.view(B, N, 2, H, D // H).permute(2, 0, 3, 1, 4).unbind(0)  # each [B, H, N, head_dim]
        v = self.v(x).view(B, N, H, D // H).transpose(1, 2)
        # no padding -> attn_mask None, so PyTorch may pick its fused (flash / memory-efficient) kernels
        out = attend(q, k, v, attn_mask, self.dropout if self.training else 0.0,
                     pad_heads=x.device.type != "cpu" and ACCELERATOR["pad_heads"])
        return self.proj(out.transpose(1, 2).reshape(B, N, D))


class Block(nn.Module):
    """Pre-norm block: h = x + DropPath(Attn(RMSNorm(x))); out = h + DropPath(MLP(RMSNorm(h)))."""

    def __init__(self, cfg: EncoderConfig, drop_path: float):
        super().__init__()
        self.norm1 = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.attn = Attention(cfg.d_model, cfg.n_heads, cfg.dropout)
        self.norm2 = RMSNorm(cfg.d_model, cfg.norm_eps)
        # non-gated SiLU MLP, bias-free; dropout on its output (authors' code) or its hidden layer (App. A.2):
        # the same parameter names either way (mlp.0, mlp.2), so weights move between the two
        paper = cfg.dropout_at == "paper"
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, cfg.d_ff, bias=False),
                                 nn.Sequential(nn.SiLU(), nn.Dropout(cfg.dropout)) if paper else nn.SiLU(),
                                 nn.Linear(cfg.d_ff, cfg.d_model, bias=False),
                                 nn.Identity() if paper else nn.Dropout(cfg.dropout))
        self.drop_path = DropPath(drop_path)

    def forward(self, x: Tensor, rot: Tensor | None, attn_mask: Tensor | None) -> Tensor:
        x = x + self.drop_path(self.attn(self.norm1(x), rot, attn_mask))
        return x + self.drop_path(self.mlp(self.norm2(x)))


class Encoder(nn.Module):
    """A stack of blocks with its own RoPE; angles are computed once per forward and shared by all blocks."""

    def __init__(self, cfg: EncoderConfig, n_axes: int, pos_encoding: str = "rope", p: float = 0.75,
                 base: float = 10000.0):
        super().__init__()
        n = cfg.depth
        # stochastic depth grows linearly: block l of n is dropped with rate lambda * l / (n - 1)
        rates = [cfg.drop_path * l / (n - 1) if n > 1 else 0.0 for l in range(n)]
        self.blocks = nn.ModuleList(Block(cfg, r) for r in rates)
        self.rope = None
        if pos_encoding in ("rope", "rope_quantized"):
            self.rope = RoPE(cfg.head_dim, n_axes, p, base, quantize=pos_encoding == "rope_quantized")

    def forward(self, x: Tensor, positions: Tensor, pad_mask: Tensor | None = None) -> Tensor:
        """x: [B, N, D], positions: [B, n_axes, N], pad_mask: [B, N] (True = padding) -> [B, N, D]."""
        rot = self.rope.angles(positions) if self.rope is not None else None  # once, for all blocks
        # boolean key-padding mask (True = may attend); padded queries still compute but are ignored
        attn_mask = None if pad_mask is None else ~pad_mask[:, None, None, :]
        for block in self.blocks:
            x = block(x, rot, attn_mask)
        return x


class Head(nn.Module):
    """dropout -> RMSNorm -> linear (App. A.2: the same shape for classification and reconstruction)."""

    def __init__(self, d_in: int, d_out: int, dropout: float = 0.0, eps: float = 1e-12):
        super().__init__()
        self.net = nn.Sequential(nn.Dropout(dropout), RMSNorm(d_in, eps), nn.Linear(d_in, d_out))

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)


@contextlib.contextmanager
def seeded(seed: int | None, owner: str = "seed"):
    """The `with` block's random draws on the CPU come from `torch.manual_seed(seed)`, and torch's global
    generator is left as it was (`torch.random.fork_rng`); `seed=None`: the global generator, unchanged.

    The models build their weights on the CPU inside it, so one seed gives one initialisation in any process."""
    if seed is None:
        yield
        return
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2 ** 63:
        raise ValueError(f"{owner} must be a whole number in [0, 2**63) or None, got {seed!r}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))  # numpy's integers too
        yield


def init_trunc_normal(module: nn.Module) -> None:
    """Truncated-normal (std 0.02) linear weights, zero biases: the authors' fine-tuning initialisation."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)


# ----------------------------------------------------------------------------- the models

def prediction_config(base: RoMAEConfig, *, n_outputs: int, dropout: float | None = None,
                      drop_path: float | None = None, dropout_at: str | None = None, **overrides) -> RoMAEConfig:
    """The config of a classifier / regressor built on the encoder of `base` (a pre-training config).

    Keeps the positional set-up and encoder size; `dropout` / `drop_path` / `dropout_at` go to the encoder;
    other RoMAEConfig fields (head, task, label_smoothing, head_dropout, init) may be overridden. The head
    defaults to [CLS] with a [CLS] token, else the padding-aware mean.
    """
    unknown = set(overrides) - {f.name for f in dataclasses.fields(RoMAEConfig)}
    if unknown:
        raise TypeError(f"unknown RoMAEConfig field(s) {sorted(unknown)}")
    enc = {k: v for k, v in (("dropout", dropout), ("drop_path", drop_path), ("dropout_at", dropout_at))
           if v is not None}
    overrides.setdefault("head", "cls" if base.use_cls else "mean")
    return dataclasses.replace(base, n_outputs=n_outputs, encoder=dataclasses.replace(base.encoder, **enc),
                               **overrides)


class RoMAETrunk(nn.Module):
    """Patch embedding, [CLS] and encoder, shared by pre-training and prediction models.

    `seed`: the initial weights come from `torch.manual_seed(seed)`, so the same seed builds the same model in
    any process (torch's global generator is left untouched); None (default) draws them from the global
    generator, as PyTorch's modules do. Subclasses add their parts in `_build`."""

    def __init__(self, cfg: RoMAEConfig, *, seed: int | None = None):
        super().__init__()
        with seeded(seed, f"{type(self).__name__}(seed=)"):
            self._build(cfg)

    def _build(self, cfg: RoMAEConfig) -> None:
        self.cfg = cfg
        # what the last loss averaged over (real hidden tokens, weighted targets, ...): romae.train's gradient
        # accumulation normalises the summed micro-batch losses by the whole batch's count
        self.loss_count: Tensor | None = None
        d = cfg.encoder.d_model
        self.embed = nn.Linear(cfg.token_dim, d)  # linear patch embedding with bias (authors' code)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d)) if cfg.use_cls else None
        if self.cls_token is not None:
            nn.init.trunc_normal_(self.cls_token, std=0.02)
        if cfg.pos_encoding == "absolute_nd" and d % (2 * cfg.n_axes):
            raise ValueError(f"d_model={d} must be divisible by 2 * n_axes = {2 * cfg.n_axes}")
        # 1-D table over the token index (the authors' "absolute" baseline), None otherwise
        self.register_buffer("abs_table", sincos_1d(torch.arange(cfg.max_len), d)
                             if cfg.pos_encoding == "absolute" else None, persistent=False)
        self.encoder = Encoder(cfg.encoder, cfg.n_axes, cfg.pos_encoding, cfg.p, cfg.rope_base)

    def prepare_inputs(self, values: Tensor, positions: Tensor, pad_mask: Tensor | None,
                       **others: Tensor | None) -> tuple[Tensor, Tensor]:
        """Check a batch and return (values, positions) ready for the model; errors name the bad value.

        Values of other dtypes (float64, integers) are cast to the model's dtype; complex values, positions or
        labels are refused (TypeError: take .real or .abs() yourself). Non-finite values or positions in real
        tokens are refused (naming the sample), and so are positions beyond +-2**53 (`MAX_POSITION`) when the
        encoding reads them, and, for pos_encoding="absolute_nd" (sin/cos in float32), float64 positions that
        float32 would round together; in padded slots they are ignored: the slots are zeroed, so padding never
        changes real tokens' outputs. `others` (mask, labels) must agree with values on the batch size.
        """
        if not torch.is_tensor(values):
            raise TypeError(f"values must be a torch.Tensor [B, N, token_dim], got {type(values).__name__}")
        if values.dim() != 3 or values.shape[-1] != self.cfg.token_dim:
            raise ValueError(f"values must be [B, N, token_dim={self.cfg.token_dim}], got "
                             f"{tuple(values.shape)}")
        B, N, _ = values.shape
        if B == 0 or N == 0:
            raise ValueError(f"empty batch: values has shape {tuple(values.shape)}")
        check_positions(positions, self.cfg.n_axes, N, check_finite=False)
        for name, x in (("values", values), ("positions", positions), *others.items()):
            _refuse_complex(name, x)
        sizes = {"positions": positions.shape[0], **{k: v.shape[0] for k, v in
                                                     dict(pad_mask=pad_mask, **others).items() if v is not None}}
        if any(b != B for b in sizes.values()):
            raise ValueError(f"batch sizes disagree: values has {B} samples, "
                             + ", ".join(f"{k} {b}" for k, b in sizes.items()))
        if pad_mask is not None:
            if pad_mask.dtype != torch.bool or tuple(pad_mask.shape) != (B, N):
                raise ValueError(f"pad_mask must be a bool tensor [{B}, {N}], got {pad_mask.dtype} "
                                 f"{tuple(pad_mask.shape)}")
            masking.check_pad_mask(pad_mask, B, N)
        dtype = self.embed.weight.dtype
        if values.dtype != dtype:  # float64, integers, bool -> the model's dtype
            values = values.to(dtype)
        if not positions.is_floating_point():  # float64: integer times (e.g. Unix seconds) stay exact
            positions = positions.double()
        # positions that the encoding reads must also lie within +-MAX_POSITION (1e300 would give noise angles)
        reads = self.cfg.pos_encoding in ("rope", "rope_quantized", "absolute_nd")
        for name, x in (("values", values), ("positions", positions.transpose(1, 2))):  # x: [B, N, ...]
            limit = MAX_POSITION if name == "positions" and reads else None
            if not masking._async_checks(x.device) and bool(
                    torch.isfinite(x.sum()) if limit is None else x.abs().amax() <= limit):
                continue  # a finite sum means finite entries: one pass, not isfinite's four (CPU only: it reads back)
            bad = ~(torch.isfinite(x) if limit is None else x.abs() <= limit).all(-1)
            if pad_mask is not None:
                bad = bad & ~pad_mask
            _check_finite(name, bad, x, limit)
        if self.cfg.pos_encoding == "absolute_nd" and positions.dtype == torch.float64 and N > 1:
            _check_float32_merge(positions, pad_mask)
        if pad_mask is not None:  # padded slots may hold anything (NaN, inf): never let them in
            values = values.masked_fill(pad_mask.unsqueeze(-1), 0.0)
            positions = positions.masked_fill(pad_mask.unsqueeze(1), 0)
        return values, positions

    def add_absolute(self, x: Tensor, positions: Tensor, token_idx: Tensor, table: Tensor | None) -> Tensor:
        """Add the absolute baseline (if enabled) to tokens x [B, M, d] at original indices token_idx [B, M]."""
        if self.cfg.pos_encoding == "absolute":
            rows = token_idx + int(self.cfg.use_cls)  # row 0 belongs to [CLS]
            _require(rows.max() < table.shape[0], f"more tokens than max_len={self.cfg.max_len} rows "
                     "of the absolute sin/cos table")
            rows = rows.clamp(max=table.shape[0] - 1)  # a deferred check failed: no out-of-range gather on a device
            return x + table[rows].to(x.dtype)
        if self.cfg.pos_encoding == "absolute_nd":
            return x + sincos_nd(positions, x.shape[-1]).to(x.dtype)
        return x

    def with_cls(self, x: Tensor, positions: Tensor, pad_mask: Tensor | None, cls: Tensor | None):
        """Prepend cls [1, 1, d] at the origin of every axis (Definition C.1), never padding."""
        if cls is None:
            return x, positions, pad_mask
        B = x.shape[0]
        cls = cls.expand(B, -1, -1).to(x.dtype)
        if self.cfg.pos_encoding == "absolute":
            cls = cls + self.abs_table[:1].to(x.dtype)
        elif self.cfg.pos_encoding == "absolute_nd":
            cls = cls + sincos_nd(positions.new_zeros(B, positions.shape[1], 1), x.shape[-1]).to(x.dtype)
        x = torch.cat((cls, x), dim=1)
        positions = torch.cat((positions.new_zeros(B, positions.shape[1], 1), positions), dim=2)
        if pad_mask is not None:
            pad_mask = torch.cat((pad_mask.new_zeros(B, 1), pad_mask), dim=1)
        return x, positions, pad_mask

    def encode(self, values: Tensor, positions: Tensor, pad_mask: Tensor | None = None,
               token_idx: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor | None]:
        """Tokens [B, M, token_dim] -> encoder outputs [B, (1 +) M, d] (+ the positions and pad mask used)."""
        if token_idx is None:
            token_idx = torch.arange(values.shape[1], device=values.device).expand(values.shape[0], -1)
        x = self.add_absolute(self.embed(values), positions, token_idx, self.abs_table)
        x, positions, pad_mask = self.with_cls(x, positions, pad_mask, self.cls_token)
        return self.encoder(x, positions, pad_mask), positions, pad_mask


class RoMAEForPreTraining(RoMAETrunk):
    """Masked-autoencoder pre-training and interpolation. `RoMAEForPreTraining(cfg, seed=0)`: see RoMAETrunk."""

    def _build(self, cfg: RoMAEConfig) -> None:
        super()._build(cfg)
        dd = cfg.decoder.d_model
        self.decoder_embed = nn.Linear(cfg.encoder.d_model, dd)  # with bias, no norm before (authors)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, dd))  # zeros (the authors'): located only by RoPE
        if cfg.mask_token_init == "normal":  # MAE (models_mae.py): torch.nn.init.normal_(mask_token, std=.02)
            # drawn from a side generator seeded off the global stream without advancing it, so every other
            # weight and every later random draw equal the zeros model's: the switch changes [MASK] only
            with torch.random.fork_rng(devices=[]):
                side = torch.Generator().manual_seed(int(torch.randint(2 ** 62, ())))
            with torch.no_grad():  # drawn on the CPU (where the generator lives), then copied in place
                self.mask_token.copy_(0.02 * torch.randn(self.mask_token.shape, generator=side, device="cpu"))
        self.decoder = Encoder(cfg.decoder, cfg.n_axes, cfg.pos_encoding, cfg.p, cfg.rope_base)
        self.head = Head(dd, cfg.token_dim, cfg.head_dropout, cfg.decoder.norm_eps)
        self.register_buffer("dec_abs_table", sincos_1d(torch.arange(cfg.max_len), dd)
                             if cfg.pos_encoding == "absolute" else None, persistent=False)
        if cfg.init == "trunc_normal":  # authors: PyTorch's default initialisation when pre-training
            init_trunc_normal(self)

    def forward_encoder(self, values, positions, mask, pad_mask=None, n_hidden: int | None = None):
        """Encode visible tokens: -> latent [B, (1 +) N_vis, d], visible_idx [B, N_vis], hidden_idx [B, N_hid].
        `n_hidden`: the mask's hidden count per sample, if known (read from the mask otherwise)."""
        visible_idx, hidden_idx = split_indices(mask, n_hidden)
        vis_pad = None if pad_mask is None else pad_mask.gather(1, visible_idx)
        latent, _, _ = self.encode(gather_tokens(values, visible_idx),
                                   gather_positions(positions, visible_idx), vis_pad, visible_idx)
        return latent, visible_idx, hidden_idx

    def forward_decoder(self, latent, positions, visible_idx, hidden_idx, pad_mask=None):
        """[encoder outputs ; one [MASK] per hidden token] through the decoder -> pred [B, N_hid, token_dim]."""
        B, n_hidden = hidden_idx.shape
        idx = torch.cat((visible_idx, hidden_idx), dim=1)  # decoder order, [CLS] excluded
        y = torch.cat((self.decoder_embed(latent), self.mask_token.expand(B, n_hidden, -1).to(latent.dtype)), 1)
        pos = gather_positions(positions, idx)
        if self.cls_token is not None:  # [CLS] rides along at the origin
            pos = torch.cat((pos.new_zeros(B, pos.shape[1], 1), pos), dim=2)
        pad = None if pad_mask is None else pad_mask.gather(1, idx)
        if pad is not None and self.cls_token is not None:
            pad = torch.cat((pad.new_zeros(B, 1), pad), dim=1)
        if self.cfg.pos_encoding in ("absolute", "absolute_nd"):
            # our fix: every decoder token gets its own row (authors: mask tokens only, off by one with [CLS])
            full_idx = idx if self.cls_token is None else torch.cat((idx.new_full((B, 1), -1), idx), 1)
            y = self.add_absolute(y, pos, full_idx, self.dec_abs_table)
        y = self.decoder(y, pos, pad)
        return self.head(y[:, -n_hidden:])

    def forward_loss(self, values, pred, hidden_idx, pad_mask=None):
        """MSE on hidden tokens only; padded hidden tokens leave numerator and denominator (ours)."""
        target = gather_tokens(values, hidden_idx)
        if self.cfg.normalize_targets:  # MAE norm-pix: each patch standardised (unbiased variance)
            centred = target - target.mean(-1, keepdim=True)  # two passes: aten::var is 2x slower on CPU
            var = centred.pow(2).sum(-1, keepdim=True) / (target.shape[-1] - 1)
            target = centred / (var + 1e-6).sqrt()
        if pad_mask is None:  # every token counts: one fused kernel forward and backward
            self.loss_count = _wide(pred).new_full((), pred.shape[0] * pred.shape[1])  # a fill: no host copy
            return F.mse_loss(_wide(pred), _wide(target))
        err = (_wide(pred) - _wide(target)).pow(2).mean(dim=-1)  # [B, N_hid]
        real = ~pad_mask.gather(1, hidden_idx)
        count = real.sum().to(err.dtype)
        _require(count > 0, "the mask hides no real (non-padded) token of the batch: the loss would be 0 and the "
                 "step would only decay the weights; hide at least one real token (mask & ~pad_mask)")
        self.loss_count = err.new_full((), err.numel()) if self.cfg.loss_counts_padding else count
        return (err * real).sum() / (err.numel() if self.cfg.loss_counts_padding else count.clamp(min=1))

    ACCEPTS = ("values", "positions", "mask", "pad_mask", "labels")

    def forward(self, values: Tensor, positions: Tensor, mask: Tensor | None = None,
                pad_mask: Tensor | None = None, labels: Tensor | None = None, **unknown) -> tuple[Tensor, Tensor]:
        """-> (pred [B, N_hid, token_dim] for the hidden tokens in original order, loss).

        Without `mask`, a uniform random mask hides cfg.mask_ratio of the tokens. `values[mask] = pred`
        puts the predictions back in place (hidden tokens keep their batch-major, token order).
        `labels` are accepted and ignored (pre-training is self-supervised), so a labelled dataset can
        be used for pre-training as it is.
        """
        _reject_unknown(self, unknown, self.ACCEPTS)
        values, positions = self.prepare_inputs(values, positions, pad_mask, mask=mask, labels=labels)
        B, N, _ = values.shape
        if N < 2:
            raise ValueError(f"pre-training needs at least 2 tokens per sample (one visible, one hidden), got N={N}")
        if mask is None:  # drawn on the device; its hidden count is known here (no device sync)
            mask = random_mask(B, N, self.cfg.mask_ratio, pad_mask, device=values.device)
            n_hidden = hidden_count(N, self.cfg.mask_ratio)
        else:  # a given mask is checked, which reads it (one sync per forward on a GPU)
            n_hidden = check_mask(mask, B, N, pad_mask)
        latent, visible_idx, hidden_idx = self.forward_encoder(values, positions, mask, pad_mask, n_hidden)
        pred = self.forward_decoder(latent, positions, visible_idx, hidden_idx, pad_mask)
        return pred, self.forward_loss(values, pred, hidden_idx, pad_mask)

    @torch.no_grad()
    def reconstruct(self, values, positions, mask, pad_mask=None) -> Tensor:
        """Interpolation: values [B, N, token_dim] with the hidden tokens replaced by predictions."""
        pred, _ = self(values, positions, mask=mask, pad_mask=pad_mask)
        out = values.clone()
        out[mask] = pred.reshape(-1, pred.shape[-1]).to(out.dtype)
        return out


class RoMAEForPrediction(RoMAETrunk):
    """Classification or regression with a [CLS] head, a padding-aware mean head, or per-token outputs.
    `RoMAEForPrediction(cfg, seed=0)`: see RoMAETrunk."""

    def _build(self, cfg: RoMAEConfig) -> None:
        super()._build(cfg)
        self.head = Head(cfg.encoder.d_model, cfg.n_outputs, cfg.head_dropout, cfg.encoder.norm_eps)
        if cfg.init in (None, "trunc_normal"):  # authors: truncated normal 0.02 when fine-tuning
            init_trunc_normal(self)

    ACCEPTS = ("values", "positions", "labels", "pad_mask")

    def forward(self, values: Tensor, positions: Tensor, labels: Tensor | None = None,
                pad_mask: Tensor | None = None, **unknown) -> tuple[Tensor, Tensor | None]:
        """-> (outputs, loss). outputs: [B, n_outputs], or [B, N, n_outputs] for head='tokens'."""
        _reject_unknown(self, unknown, self.ACCEPTS)
        values, positions = self.prepare_inputs(values, positions, pad_mask, labels=labels)
        x, _, _ = self.encode(values, positions, pad_mask)
        tokens = x[:, 1:] if self.cls_token is not None else x
        if self.cfg.head == "cls":
            out = self.head(x[:, 0])
        elif self.cfg.head == "mean":  # mean over real tokens only (out of place; authors' bug 12)
            real = torch.ones_like(tokens[..., 0]) if pad_mask is None else (~pad_mask).to(tokens.dtype)
            out = self.head((tokens * real.unsqueeze(-1)).sum(1) / real.sum(1, keepdim=True))
        else:
            out = self.head(tokens)
        return out, None if labels is None else self.loss(out, labels, pad_mask)

    def loss(self, out: Tensor, labels: Tensor, pad_mask: Tensor | None = None) -> Tensor:
        """Cross-entropy (PyTorch label smoothing) or MSE; per-token losses ignore padding."""
        if not torch.is_tensor(labels):
            raise TypeError(f"labels must be a torch.Tensor, got {type(labels).__name__}")
        if self.cfg.task == "classification":
            logits = _wide(out.reshape(-1, out.shape[-1]))
            if labels.is_floating_point() and labels.shape == out.shape:  # class probabilities
                _finite_labels(labels)
                self.loss_count = logits.new_full((), logits.shape[0])
                return F.cross_entropy(logits, labels.reshape(logits.shape).to(logits.dtype),
                                       label_smoothing=self.cfg.label_smoothing)
            if labels.is_floating_point() or labels.is_complex():
                raise ValueError(f"classification labels must be integer class indices {list(out.shape[:-1])} "
                                 f"(or class probabilities {list(out.shape)}), got {labels.dtype} "
                                 f"{list(labels.shape)}")
            target = labels.reshape(-1).long()
            if target.numel() != logits.shape[0]:
                raise ValueError(f"{target.numel()} labels for {logits.shape[0]} outputs")
            bad = (target < 0) | (target >= self.cfg.n_outputs)
            if self.cfg.head == "tokens" and pad_mask is not None:  # -100 etc. at padded tokens: ignored
                bad = bad & ~pad_mask.reshape(-1)
                target = target.masked_fill(pad_mask.reshape(-1), -100)
            found = target.index_select(0, masking.first_true(bad).reshape(1))
            _require(~bad.any(), f"class labels must lie in [0, n_outputs={self.cfg.n_outputs})",
                     lambda: f", found {found.item()}")
            target = target.masked_fill(bad, -100)  # a deferred check failed: no out-of-range class in the kernel
            weight = None if self.cfg.class_weights is None else self._class_weights(logits)
            counted = (target != -100).to(logits.dtype)  # what cross-entropy's mean divides by: its weights of real targets
            self.loss_count = counted.sum() if weight is None else (weight[target.clamp(min=0)] * counted).sum()
            return F.cross_entropy(logits, target, weight=weight, label_smoothing=self.cfg.label_smoothing)
        if labels.numel() != out.numel():
            raise ValueError(f"regression labels must have {list(out.shape)} entries, got {list(labels.shape)}")
        labels = _wide(labels.reshape(out.shape))
        if self.cfg.head == "tokens" and pad_mask is not None:  # targets at padded tokens: ignored, like values
            labels = labels.masked_fill(pad_mask.unsqueeze(-1), 0.0)
        _finite_labels(labels)
        err = (_wide(out) - labels).pow(2)
        if self.cfg.head == "tokens" and pad_mask is not None:
            real = (~pad_mask).unsqueeze(-1).to(err.dtype)
            self.loss_count = real.sum() * err.shape[-1]
            return (err * real).sum() / self.loss_count
        self.loss_count = err.new_full((), err.numel())
        return err.mean()

    def _class_weights(self, like: Tensor) -> Tensor:
        """cfg.class_weights as a tensor on like's device and dtype, copied there once (not every step: a copy
        from host memory waits for the device)."""
        held = getattr(self, "_weights_held", None)
        if held is None or held.device != like.device or held.dtype != like.dtype:
            held = self._weights_held = torch.tensor(self.cfg.class_weights, dtype=like.dtype).to(like.device)
        return held

    @classmethod
    def from_pretrained(cls, pretrained: "nn.Module | str | Path", *, n_outputs: int, embedding: bool = False,
                        dropout: float | None = None, drop_path: float | None = None, seed: int | None = None,
                        **overrides) -> "RoMAEForPrediction":
        """A classifier / regressor whose encoder blocks and [CLS] come from a pre-training model.

        `pretrained`: a RoMAEForPreTraining, or a checkpoint folder written by `fit(out_dir=...)`. The
        positional set-up (token_dim, axes, encoding, p, [CLS]) and the encoder size are taken from it;
        `dropout` / `drop_path` set the encoder's (Table 12's "dropout / stochastic depth"), and any
        other RoMAEConfig field (head, task, label_smoothing, head_dropout, ...) can be overridden.
        The patch embedding is re-initialised unless `embedding=True` (as the authors). `seed` fixes the
        weights that are not copied (the head, and the embedding unless copied), as in the constructor.
        """
        if isinstance(pretrained, nn.Module):
            if not isinstance(getattr(pretrained, "cfg", None), RoMAEConfig):
                raise TypeError(f"{type(pretrained).__name__} is not a RoMAE model (no RoMAEConfig .cfg)")
            base, state = pretrained.cfg, pretrained.state_dict()
        else:
            from .checkpoint import load_state, read_config

            saved = read_config(pretrained)
            base = RoMAEConfig.from_dict({f.name: saved[f.name] for f in dataclasses.fields(RoMAEConfig)
                                          if f.name in saved})
            state = load_state(pretrained)
        cfg = prediction_config(base, n_outputs=n_outputs, dropout=dropout, drop_path=drop_path, **overrides)
        model = cls(cfg, seed=seed)
        model.load_encoder(state, embedding=embedding)
        return model

    def load_encoder(self, pretrained: dict[str, Tensor] | nn.Module, embedding: bool = False) -> list[str]:
        """Copy encoder blocks and [CLS] (and the patch embedding if `embedding`) from a pre-training model.

        The authors transferred blocks and [CLS] only and re-initialised the patch embedding (their
        default here too). Returns the names copied; raises if a needed weight is missing or misshaped.
        """
        src = pretrained.state_dict() if isinstance(pretrained, nn.Module) else pretrained
        prefixes = ("encoder.", "cls_token") + (("embed.",) if embedding else ())
        own = self.state_dict()
        wanted = [k for k in own if k.startswith(prefixes)]
        missing = [k for k in wanted if k not in src or src[k].shape != own[k].shape]
        if missing:
            raise ValueError(f"pre-trained weights lack or misshape {len(missing)} tensors, e.g. {missing[:3]}")
        self.load_state_dict({k: src[k] for k in wanted}, strict=False)
        return wanted
