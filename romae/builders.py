"""Builders: a user's own series or tables -> RoMAE tokens (values, positions, pad_mask, labels).

    train = from_sequences(train_series, times=train_times, labels=train_labels)   # fits the standardiser
    test = from_sequences(test_series, times=test_times, labels=test_labels, like=train)
    obs = from_long(df, id="patient", time="hours", variable="signal", value="reading")

`from_sequences` makes one token per time step holding all channels (the paper's UEA set-up, 1-D
positions = the time of each step). `from_long` makes one token per observation of a long table, with
2-D positions (time, variable index) (the paper's PhysioNet and ELAsTiCC set-up). Both pad to the
longest sample with `pad_mask` (True = padding), standardise with statistics of the *training* data
only (scikit-learn's fit/transform habit: pass `like=train` to transform test data the same way, with
the same classes and variables), and return a `TokenDataset`, which `romae.train.fit` and
`romae.train.predict` take as it is.

Missing values are NaN. A time step whose channels are all NaN is not an observation: it is dropped and
the remaining steps keep their true times as positions. A step with only some channels missing is
filled: by linear interpolation in time within the sample (nearest value at the edges; ContiFormer's
preprocessing for the UEA archive), or with the training mean (`fill="mean"`); a channel a sample never
observes gets the training mean. Infinite values are refused, naming the sample. `from_sequences(drop=0.3,
seed=...)` removes that share of each series' steps at random first (the paper's irregular UEA protocol).

Refused rather than turned into wrong numbers: complex numbers anywhere (TypeError); values beyond float32's
range or that standardise to a non-finite float32; times that are not finite or lie beyond +-2**53 (after
time_scale; subtract a reference time), or that float32 has already rounded together.

Labels: class labels (str, int, bool) become class indices (`classes`); float labels are regression
targets, kept exactly as given (float32), not standardised by default: only the inputs (`values`) are. So a
regression model (`task="regression"`, MSE) learns the targets in their own units and `predict` returns
predictions in those units, with nothing to invert. For large-scale targets pass `standardize_targets=True`:
the targets are standardised with their training mean and std (`.target_standardizer`, reused by `like=`),
and `romae.train.predict` returns predictions in the original units.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from safetensors.torch import load_file, save_file

from . import precheck
from .feeding import ArrayDataset
from .sequence_checks import (_check_long_times, _check_standardised, _check_stats, _check_times, _py,  # noqa: F401
                              _real)

F32_MAX = float(np.finfo(np.float32).max)  # values and targets are float32 tensors: beyond this they become inf


@dataclasses.dataclass
class Standardizer:
    """Per-channel (from_sequences) or per-variable-and-channel (from_long) mean and std of real tokens.

    Fitted on training data only; a constant channel gets std 1. A dataset's `standardizer` scales the input
    values only; its `target_standardizer` (opt-in, `standardize_targets=True`) is another one, for the regression
    targets. `transform`: (x - mean) / std; `inverse_transform`: back to the original units. Non-finite means and
    non-finite or non-positive stds are refused (ValueError naming the channel).

    Attributes:
        mean: float64 array, [C] (by="channel") or [n_variables, C] (by="variable"): the training mean of
            each channel (of each variable's channel), over real, observed values.
        std: float64 array of the same shape: the training standard deviation (1 where it is 0 or not
            finite).
        by: "channel" (one row for all tokens: `from_sequences`) or "variable" (the row is picked by the
            token's variable index, positions axis 1: `from_long`).
    """

    mean: np.ndarray
    std: np.ndarray
    by: str = "channel"

    def __post_init__(self):
        self.mean = np.asarray(_real(self.mean, "Standardizer mean"), dtype=np.float64)
        self.std = np.asarray(_real(self.std, "Standardizer std"), dtype=np.float64)
        if self.by not in ("channel", "variable"):
            raise ValueError(f"by must be 'channel' or 'variable', got {self.by!r}")
        for name, a, ok in (("mean", self.mean, np.isfinite(self.mean)),
                            ("std", self.std, np.isfinite(self.std) & (self.std > 0))):
            if not ok.all():
                at = tuple(np.argwhere(~ok)[0])
                names = ("channel",) if self.by == "channel" and a.ndim == 1 else ("variable", "channel")[-a.ndim:]
                where = "".join(f"{',' if k else ''} {n} {i}" for k, (n, i) in enumerate(zip(names, at)))
                where = f" of{where}" if at else ""
                raise ValueError(f"Standardizer {name}{where} is {a[at]}: a {name} must be finite"
                                 + (" and positive" if name == "std" else ""))

    def _rows(self, variable: torch.Tensor | None):
        mean, std = torch.as_tensor(self.mean, dtype=torch.float32), torch.as_tensor(self.std, dtype=torch.float32)
        if self.by == "variable":  # [B, N] indices -> [B, N, C]
            return mean[variable], std[variable]
        return mean, std

    def transform(self, values: torch.Tensor, variable: torch.Tensor | None = None) -> torch.Tensor:
        """values [B, N, C] (variable [B, N] long for by='variable') -> standardised values."""
        mean, std = self._rows(variable)
        return (values - mean) / std

    def inverse_transform(self, values: torch.Tensor, variable: torch.Tensor | None = None) -> torch.Tensor:
        """Back to the original units (e.g. for predictions of a pre-training model)."""
        mean, std = self._rows(variable)
        return values * std + mean

    def to_dict(self) -> dict:
        return dict(mean=self.mean.tolist(), std=self.std.tolist(), by=self.by)


class TokenDataset(ArrayDataset):
    """Tokens with what built them: values [B, N, C], positions [B, A, N], pad_mask [B, N], labels [B].

    Attributes: `labels` (the labels [B], or None; as image datasets have them, e.g.
    `metrics.accuracy(test.labels, predict(model, test))`; regression targets always in their own units, as
    `predict` and the baselines give them), `standardizer` (or None; the inputs' statistics),
    `target_standardizer` (or None; the regression targets' training mean and std when built with
    `standardize_targets=True`: `tensors["labels"]`, what the model trains on, then hold standardised targets and
    `romae.train.predict` maps outputs back),
    `classes` (class names, index = label; None for regression targets), `variables` (from_long: names, index = the
    position on axis 1), `ids` (sample ids, in order).
    """

    def __init__(self, *, standardizer: Standardizer | None = None, classes: list | None = None,
                 variables: list | None = None, ids: list | None = None,
                 target_standardizer: Standardizer | None = None, **tensors):
        super().__init__(**tensors)
        self.standardizer, self.classes, self.variables, self.ids = standardizer, classes, variables, ids
        self.target_standardizer = target_standardizer
        labels, t = self.tensors.get("labels"), target_standardizer  # test.labels, as image datasets have them,
        self.labels = labels if labels is None or t is None else (  # regression targets in their own units
            labels.double() * torch.as_tensor(t.std).reshape(-1) + torch.as_tensor(t.mean).reshape(-1)).float()

    @property
    def token_dim(self) -> int:
        return self.tensors["values"].shape[-1]

    @property
    def n_axes(self) -> int:
        return self.tensors["positions"].shape[1]

    @property
    def n_classes(self) -> int | None:
        return None if self.classes is None else len(self.classes)

    def _meta(self) -> dict:
        meta = dict(standardizer=None if self.standardizer is None else self.standardizer.to_dict(),
                    classes=self.classes, variables=self.variables, ids=self.ids)
        if self.target_standardizer is not None:  # only then: other datasets' saved JSON stays as it was
            meta["target_standardizer"] = self.target_standardizer.to_dict()
        return meta

    def subset(self, idx) -> "TokenDataset":
        """The samples `idx` (indices or a boolean mask), with the same standardiser, classes, variables."""
        idx = torch.as_tensor(idx)
        idx = idx.nonzero().flatten() if idx.dtype == torch.bool else idx.long()
        ids = None if self.ids is None else [self.ids[i] for i in idx.tolist()]
        return TokenDataset(**{**self._meta(), "standardizer": self.standardizer, "ids": ids,
                               "target_standardizer": self.target_standardizer},
                            **{k: t[idx] for k, t in self.tensors.items()})

    def save(self, path: str | Path) -> Path:
        """Write <path>.safetensors (tensors) and <path>.json (standardiser, classes, variables, ids)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        save_file({k: v.contiguous() for k, v in self.tensors.items()}, str(path.with_suffix(".safetensors")))
        path.with_suffix(".json").write_text(json.dumps(self._meta(), default=str))
        return path

    @classmethod
    def load(cls, path: str | Path) -> "TokenDataset":
        path = Path(path)
        meta = json.loads(path.with_suffix(".json").read_text())
        std, target = meta.pop("standardizer"), meta.pop("target_standardizer", None)
        return cls(standardizer=None if std is None else Standardizer(**std),
                   target_standardizer=None if target is None else Standardizer(**target), **meta,
                   **load_file(str(path.with_suffix(".safetensors"))))

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k} {list(v.shape)}" for k, v in self.tensors.items())
        extra = f", {len(self.classes)} classes" if self.classes is not None else ""
        return f"TokenDataset({len(self)} samples: {shapes}{extra})"


# ----------------------------------------------------------------------------- shared pieces

def _encode_labels(labels, classes: list | None, n: int) -> tuple[torch.Tensor | None, list | None]:
    """Labels -> (tensor, classes). Floats are regression targets; anything else (str, int, bool) is a
    class whose index in `classes` (default: the sorted distinct labels) becomes the label."""
    if labels is None:
        return None, classes
    arr = _real(labels, "labels")
    if len(arr) != n:
        raise ValueError(f"labels has {len(arr)} entries for {n} samples")
    if arr.dtype.kind == "f" and classes is None:
        bad = ~np.isfinite(arr.reshape(n, -1)).all(1)
        if bad.any():
            raise ValueError(f"regression labels must be finite; sample {int(np.flatnonzero(bad)[0])} is not")
        big = np.abs(arr.reshape(n, -1)) > F32_MAX
        if big.any():
            i, k = (int(j) for j in np.argwhere(big)[0])
            raise ValueError(f"the regression label of sample {i} is {arr.reshape(n, -1)[i, k]:g}, beyond float32's range "
                             "(+-3.4e38), which targets are stored in; rescale the targets")
        return torch.as_tensor(arr, dtype=torch.float32), None
    # classes: look at the values as given (numpy would turn [1, "1"] into two equal strings)
    seq = labels.tolist() if hasattr(labels, "tolist") else [v.item() if isinstance(v, np.generic) else v for v in labels]
    gone = [i for i, v in enumerate(seq) if v is None or (isinstance(v, float) and v != v)]
    if gone:
        raise ValueError(f"the label of sample {gone[0]} is missing ({seq[gone[0]]!r}; {len(gone)} sample(s) in all): "
                         "give every sample its class, or leave the unlabelled ones out")
    kinds = {}
    for v in seq:
        kinds.setdefault("bool" if isinstance(v, bool) else "int" if isinstance(v, int) else type(v).__name__, v)
    if len(kinds) > 1:
        shown = ", ".join(f"{k} {v!r}" for k, v in kinds.items())
        raise ValueError(f"labels mix types ({shown}): 1 and '1' (or True and 1) would become one class; give "
                         "every label the same type")
    if classes is None:
        classes = sorted(set(seq), key=lambda c: (str(type(c)), c))
    index = {c: i for i, c in enumerate(classes)}
    unknown = sorted({str(c) for c in seq if c not in index})
    if unknown:
        raise ValueError(f"labels {unknown[:10]} are not among the classes {list(classes)[:20]}")
    return torch.tensor([index[c] for c in seq], dtype=torch.long), list(classes)


def _fill_partial(x: np.ndarray, t: np.ndarray, fill: str) -> np.ndarray:
    """Fill NaN entries of x [T, C] (no all-NaN row left) per channel: linear interpolation over t with
    the nearest value at the edges, or NaN kept for fill='mean' (filled with the mean after scaling)."""
    if fill == "mean" or not np.isnan(x).any():
        return x
    x = x.copy()
    for c in np.flatnonzero(np.isnan(x).any(0)):
        ok = ~np.isnan(x[:, c])
        if ok.any():  # a channel never observed in this sample stays NaN -> training mean
            x[~ok, c] = np.interp(t[~ok], t[ok], x[ok, c])
    return x


def _pad(samples: list[np.ndarray], width: int) -> tuple[np.ndarray, np.ndarray]:
    """Right-pad [n_i, width] arrays -> ([B, N, width] zeros at padding, pad_mask [B, N])."""
    N = max(len(s) for s in samples)
    out = np.zeros((len(samples), N, width), dtype=np.float64)
    pad = np.ones((len(samples), N), dtype=bool)
    for i, s in enumerate(samples):
        out[i, : len(s)] = s
        pad[i, : len(s)] = False
    return out, pad


def _check_like(like, standardize, standardize_targets=False, time_scale=1.0):
    if like is not None and not isinstance(like, TokenDataset):
        raise TypeError(f"like= must be the TokenDataset built from the training data, got {type(like).__name__}")
    if standardize not in (True, False):
        raise ValueError(f"standardize must be True or False, got {standardize!r}")
    if standardize_targets not in (True, False):
        raise ValueError(f"standardize_targets must be True or False, got {standardize_targets!r}")
    if isinstance(time_scale, bool) or not isinstance(time_scale, (int, float, np.integer, np.floating)) or not (
            np.isfinite(time_scale) and time_scale != 0):
        raise ValueError(f"time_scale must be a finite, non-zero number, got {time_scale!r}")


def _standardize_targets(labels, y: torch.Tensor | None, classes, like, wanted: bool):
    """-> (labels tensor, target standardiser or None): float regression targets standardised with the training
    mean and std per target (fitted here when `wanted`, or `like.target_standardizer`), in float64, stored float32.
    Without either, the labels pass as `_encode_labels` made them."""
    scaler = like.target_standardizer if like is not None else None
    if like is not None and wanted and scaler is None:
        raise ValueError("standardize_targets=True, but like= was built without it (its targets' statistics are the "
                         "ones to use): build the training data with standardize_targets=True")
    if scaler is None and not wanted:
        return y, None
    if y is None:
        if like is None:
            raise ValueError("standardize_targets=True needs regression targets: pass labels=")
        return y, scaler
    if classes is not None:
        raise ValueError("standardize_targets=True " + ("" if like is None else "(like=) ") + "needs float regression "
                         "targets, but these labels are classes")
    arr = np.asarray(labels, dtype=np.float64)
    if scaler is None:
        flat = arr.reshape(len(arr), -1)
        mean, std = flat.mean(0), flat.std(0)
        _check_stats(mean, std, np.ones(len(mean), bool), lambda at: f"regression target {at[0]}")
        scaler = Standardizer(mean.reshape(arr.shape[1:]), np.where(std > 0, std, 1.0).reshape(arr.shape[1:]))
    if arr.shape[1:] != scaler.mean.shape:
        raise ValueError(f"these targets have shape {list(arr.shape[1:])} per sample, the training data's "
                         f"{list(scaler.mean.shape)}")
    z = (arr - scaler.mean) / scaler.std
    bad = ~(np.abs(z.reshape(len(z), -1)) <= F32_MAX).all(1)
    if bad.any():
        raise ValueError(f"the regression target of sample {int(np.flatnonzero(bad)[0])} standardises beyond "
                         "float32's range; rescale the targets")
    return torch.as_tensor(z, dtype=torch.float32), scaler


def _drop(x, rate: float, rng: np.random.Generator) -> np.ndarray:
    """A float64 copy of series x [T, C] (or [T]) with floor(rate * T) steps, drawn by `rng`, set to NaN."""
    x = np.array(x, dtype=np.float64, copy=True)
    x[rng.choice(len(x), size=int(len(x) * rate), replace=False)] = np.nan
    return x


def drop_steps(series: Sequence, rate: float, seed: int = 0) -> list[np.ndarray]:
    """Copies of series [T_i, C] with floor(rate * T_i) random steps set to NaN: the paper's irregular UEA protocol
    (Table 6: 30, 50, 70 %), one generator, `np.random.default_rng(seed)`, over the series in order. The removed steps
    become all-NaN rows, which `from_sequences` drops while the kept steps keep their true times (what
    `from_sequences(..., drop=rate, seed=seed)` does)."""
    rng = np.random.default_rng(seed)
    return [_drop(x, rate, rng) for x in series]


# ----------------------------------------------------------------------------- builders

def from_sequences(values: Sequence, times: Sequence | None = None, labels=None, *, like: TokenDataset | None = None,
                   standardize: bool = True, fill: str = "interpolate", time_scale: float = 1.0,
                   classes: list | None = None, drop: float = 0.0, seed: int = 0,
                   standardize_targets: bool = False) -> TokenDataset:
    """Per-sample arrays [T_i, C] (lengths may differ, NaN = missing) -> TokenDataset, one token per step.

    times: per-sample real times [T_i] (default: the step index 0..T_i-1), multiplied by `time_scale`.
    labels: one per sample (class names or ids -> class indices; floats -> regression targets).
    like: the training TokenDataset: reuse its standardiser and classes (for test or new data); without
    it, the standardiser is fitted here (per-channel mean/std over the real, observed values).
    standardize: False fits no standardiser, so the values stay as given (with `like`, its standardiser,
    or its lack of one, is used whatever this says).
    fill: 'interpolate' (linear in time within the sample) or 'mean' for partly missing steps.
    classes: the class order (index = label) instead of the sorted distinct labels.
    drop: the share of each series' time steps removed at random before anything else (the paper's irregular
    UEA protocol, Table 6: 0.3, 0.5, 0.7), in [0, 1): floor(drop x T_i) of the T_i steps given (NaN steps
    included) become missing, drawn by one generator, `np.random.default_rng(seed)`, over the series in order,
    so a seed gives the same drop every time (`drop_steps`, which Table 6's experiment uses, with seed
    DROP_SEED + 1 for its training split and + 2 for its test split). The kept steps
    keep their true times as positions. Pass it for test data too (with another seed); 0 (default): no step
    dropped, no generator drawn.
    standardize_targets: True standardises float regression targets with the training mean and std of each
    target (`.target_standardizer`, reused by `like=`), and `romae.train.predict` maps the model's outputs back to
    the targets' original units; see below.
    -> values [B, N, C] float32, positions [B, 1, N] float64, pad_mask [B, N], labels [B] (if given).

    Refused, each naming the sample: complex values, times or labels (TypeError: take .real or abs() yourself);
    values beyond float32's range, or that standardise to a non-finite float32; times that are not finite, lie
    beyond +-2**53 (after time_scale) or arrive as float32 at Unix-second scale with steps rounded together.

    Float labels (a float array, [n] or [n, k] for k targets per sample) are regression targets, unless
    `classes=` is given or `like` has classes. They are NOT standardised: `standardize` and the
    standardiser (`.standardizer`, kept on the dataset) apply to the input values only, and the labels are
    stored as given (float32; NaN or inf refused). A model trained on them (RoMAEConfig(task="regression",
    n_outputs=k), MSE) learns the targets in their own units, and `romae.train.predict` returns predictions in
    those original units: there is nothing to invert and no target statistics are kept. The reason: the
    paper's regression targets (Pendulum's sin/cos, Sec. 5.4; positions, Sec. 5.1) are used and scored as
    given, so the MSE is in the units the paper reports. For targets of a large or odd scale, pass
    `standardize_targets=True`: the labels are then stored as (y - mean) / std with the training mean and std of
    each target (float64, std 1 where it is 0), kept as `.target_standardizer` and reused by `like=` (the test
    data's targets are scaled with the training statistics); the model learns, and fit's losses and metrics
    are, in standardised units, and `romae.train.predict(model, data)` returns pred * std + mean, in the
    original units, for data that carries the target standardiser.
    Integer labels are classes, not targets: pass integer-valued targets as floats.
    """
    _check_like(like, standardize, standardize_targets, time_scale)
    if fill not in ("interpolate", "mean"):
        raise ValueError(f"fill must be 'interpolate' or 'mean', got {fill!r}")
    if isinstance(drop, bool) or not isinstance(drop, (int, float, np.integer, np.floating)) or not 0 <= drop < 1:
        raise ValueError(f"drop must be a share of each series' steps in [0, 1), got {drop!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a whole number >= 0, got {seed!r}")
    if len(values) == 0:
        raise ValueError("values is empty: no samples to build")
    if times is not None and len(times) != len(values):
        raise ValueError(f"times has {len(times)} entries for {len(values)} samples")
    rng = np.random.default_rng(seed) if drop else None  # one generator over the series, in order (`drop_steps`)
    rows, stamps, steps, C = [], [], [], None
    for i, v in enumerate(values):
        x = np.asarray(_real(v, f"values of sample {i}"), dtype=np.float64)
        x = x[:, None] if x.ndim == 1 else x  # a univariate series [T] -> [T, 1]
        if x.ndim != 2:
            raise ValueError(f"sample {i}: expected an array [T, C], got shape {np.shape(v)}")
        if rng is not None:  # floor(drop * T_i) of the T_i steps become all-NaN rows, dropped below
            x = _drop(x, drop, rng)
        if C is None:
            C = x.shape[1]
        if x.shape[1] != C:
            raise ValueError(f"sample {i} has {x.shape[1]} channels, sample 0 has {C}")
        if np.isinf(x).any():
            raise ValueError(f"sample {i} holds an infinite value (at step {int(np.argwhere(np.isinf(x))[0, 0])}); "
                             "use NaN for a missing value")
        if (np.abs(x) > F32_MAX).any():  # float32 would make it inf
            s, c = (int(k) for k in np.argwhere(np.abs(x) > F32_MAX)[0])
            raise ValueError(f"sample {i}, step {s}, channel {c}: {x[s, c]:g} is beyond float32's range (+-3.4e38), "
                             "which RoMAE computes in; rescale that channel")
        given = None if times is None else _real(times[i], f"times of sample {i}")
        t = np.arange(len(x), dtype=np.float64) if times is None else np.asarray(given, dtype=np.float64)
        if t.shape != (len(x),):
            raise ValueError(f"sample {i}: times has shape {t.shape}, values {x.shape[0]} steps")
        if not np.isfinite(t).all():
            j = int(np.flatnonzero(~np.isfinite(t))[0])
            raise ValueError(f"sample {i}: times must be finite, found {t[j]} at step {j}")
        keep = ~np.isnan(x).all(1)  # an all-NaN step is no observation
        if not keep.any():
            raise ValueError(f"sample {i} has no observed value")
        rows.append(_fill_partial(x[keep], t[keep], fill))
        with np.errstate(over="ignore"):  # an overflow to inf is refused by _check_times, naming it
            stamps.append(t[keep] * time_scale)
        steps.append(np.flatnonzero(keep))
        _check_times(i, t[keep] if given is None else given[keep], stamps[-1], steps[-1], time_scale)
    if like is not None and like.token_dim != C:
        raise ValueError(f"these series have {C} channels, the training data {like.token_dim}")
    vals, pad = _pad(rows, C)
    precheck.dropped_short(values, rows, drop)  # series that drop= left with (almost) no steps: warned
    pos, _ = _pad([s[:, None] for s in stamps], 1)
    real = ~pad
    scaler = like.standardizer if like is not None else None
    if scaler is None and standardize and like is None:
        obs = vals[real]  # [n_real, C], NaN where missing
        std = np.nanstd(obs, axis=0)
        mean = np.nanmean(obs, axis=0)  # NaN (and std NaN: 1) for a channel never observed
        _check_stats(mean, std, ~np.isnan(obs).all(0), lambda at: f"channel {at[0]}")
        scaler = Standardizer(np.nan_to_num(mean), np.where((std > 0) & np.isfinite(std), std, 1.0))
    v = torch.as_tensor(vals, dtype=torch.float32)
    if scaler is not None:
        v = scaler.transform(v)
        _check_standardised(v, vals, pad, lambda b, n, c: (f"channel {c}: sample {b}, step {steps[b][n]}",
                                                           scaler.mean[c], scaler.std[c]))
    v = torch.nan_to_num(v, nan=0.0)  # remaining gaps (fill='mean', never-observed channels): the mean
    v[torch.as_tensor(pad)] = 0.0
    y, classes = _encode_labels(labels, like.classes if like is not None else classes, len(rows))
    y, targets = _standardize_targets(labels, y, classes, like, standardize_targets)
    # positions stay float64: RoPE forms its angles in float64, so large times (Unix seconds) keep their digits
    tensors = dict(values=v, positions=torch.as_tensor(pos[..., 0][:, None, :], dtype=torch.float64),
                   pad_mask=torch.as_tensor(pad))
    if y is not None:
        tensors["labels"] = y
    return TokenDataset(standardizer=scaler, classes=classes, ids=list(range(len(rows))),
                        target_standardizer=targets, **tensors)


def from_long(df: pd.DataFrame, *, id: str, time: str, variable: str, value: str | Sequence[str],
              label: str | None = None, like: TokenDataset | None = None, standardize: bool = True,
              time_scale: float = 1.0, variables: list | None = None, classes: list | None = None,
              standardize_targets: bool = False) -> TokenDataset:
    """A long table (one row per observation) -> TokenDataset, one token per observation.

    Each row's `value` column(s) form the token (several columns: e.g. flux and flux error, as one token
    of width 2); positions are 2-D: (time x time_scale, variable index). Variable names map to a stable
    index (`variables`, default: the sorted names), saved with the dataset; `like=train` reuses the
    training data's variables, classes and per-variable standardiser. Rows whose values are all NaN are
    not observations and are dropped; a row with only some value columns NaN is an error. Datetime times
    become seconds since the sample's first observation. Tokens are ordered by (time, variable) within a
    sample; samples by sorted id. `label`: a column constant within each id.

    The standardiser (`standardize`, fitted here unless `like` is given) is per variable and value column,
    over the observed values, and scales the token values only. A float `label` column holds regression
    targets (unless `classes=` is given or `like` has classes), kept as given, NOT standardised, exactly as
    in `from_sequences`: a regression model learns them, and `romae.train.predict` returns them, in their
    original units (no target statistics are kept). Other labels (str, int, bool) are classes.
    `standardize_targets=True` standardises the float targets with their training mean and std instead, and
    `predict` maps outputs back to the original units, as in `from_sequences`.

    Refused, naming the id and variable: complex columns (TypeError); values beyond float32's range, or that
    standardise to a non-finite float32; times not finite or beyond +-2**53 (after time_scale); a float32 time
    column at Unix-second scale whose distinct times have been rounded together (repeated (id, variable, time)).
    """
    _check_like(like, standardize, standardize_targets, time_scale)
    value_cols = [value] if isinstance(value, str) else list(value)
    needed = [id, time, variable, *value_cols] + ([label] if label is not None else [])
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise KeyError(f"columns {missing} are not in the table (it has {list(df.columns)})")
    df = df[needed].copy()
    for col in [*value_cols, time] + ([label] if label is not None else []):
        _real(df[col].to_numpy(), f"column {col!r}")
    for col, what in ((id, "sample id"), (variable, "variable")):
        gone = df[col].isna().to_numpy()
        if gone.any():  # groupby would drop NaN ids silently; a NaN variable would become a variable "nan"
            raise ValueError(f"column {col!r} (the {what}) is missing in {int(gone.sum())} row(s), e.g. row "
                             f"{_py(df.index[gone][0])!r}: every observation needs its {what}; drop or fill those rows")
    vals = df[value_cols].to_numpy(dtype=np.float64)
    if np.isinf(vals).any():
        r = df.iloc[int(np.argwhere(np.isinf(vals))[0, 0])].map(_py)
        raise ValueError(f"infinite value for id {r[id]!r}, variable {r[variable]!r}, time {r[time]!r}")
    if (np.abs(vals) > F32_MAX).any():  # float32 would make it inf
        k, c = (int(j) for j in np.argwhere(np.abs(vals) > F32_MAX)[0])
        r = df.iloc[k].map(_py)
        raise ValueError(f"id {r[id]!r}, variable {r[variable]!r}, time {r[time]!r}: {value_cols[c]} = {vals[k, c]:g} is "
                         "beyond float32's range (+-3.4e38), which RoMAE computes in; rescale it")
    nan = np.isnan(vals)
    partial = nan.any(1) & ~nan.all(1)
    if partial.any():
        r = df.iloc[int(np.flatnonzero(partial)[0])].map(_py)
        raise ValueError(f"id {r[id]!r}, variable {r[variable]!r}, time {r[time]!r}: some of {value_cols} are "
                         "NaN and some not; fill or drop them first")
    if variables is None and like is None:  # every variable named in the table, observed or not
        variables = sorted(df[variable].unique().tolist(), key=str)
    df = df[~nan.all(1)]
    if df.empty:
        raise ValueError("the table has no observed value")
    t = given = df[time]
    if pd.api.types.is_datetime64_any_dtype(t) or pd.api.types.is_timedelta64_dtype(t):
        t = (t - t.groupby(df[id]).transform("min")).dt.total_seconds()  # relative: float32-safe
    df = df.assign(**{time: pd.to_numeric(t, errors="raise").astype(np.float64) * time_scale})
    _check_long_times(df, given, id, time, variable, time_scale)
    variables = like.variables if like is not None else variables
    var_index = {v: i for i, v in enumerate(variables)}
    unknown = sorted({str(v) for v in df[variable].unique() if v not in var_index})
    if unknown:
        raise ValueError(f"variables {unknown[:10]} are not among the known variables {list(variables)[:20]}")
    df = df.assign(_var=df[variable].map(var_index).astype(np.int64)).sort_values([id, time, "_var"], kind="stable")
    groups = list(df.groupby(id, sort=True))
    labels = None
    if label is not None:
        per_id = df.groupby(id, sort=True)[label].nunique(dropna=False)
        if (per_id > 1).any():
            raise ValueError(f"column {label!r} differs within id {_py(per_id.index[per_id > 1][0])!r}: one label per id")
        labels = df.groupby(id, sort=True)[label].first().to_numpy()
    C = len(value_cols)
    tok, _ = _pad([g[value_cols].to_numpy(np.float64) for _, g in groups], C)
    pos, pad = _pad([g[[time, "_var"]].to_numpy(np.float64) for _, g in groups], 2)
    var = torch.as_tensor(pos[..., 1], dtype=torch.long)
    scaler = like.standardizer if like is not None else None
    if scaler is None and standardize and like is None:
        stats = df.groupby("_var")[value_cols].agg(["mean", "std"])
        mean, std = np.zeros((len(variables), C)), np.ones((len(variables), C))
        for j, col in enumerate(value_cols):
            mean[stats.index, j] = stats[(col, "mean")].to_numpy()
            s = stats[(col, "std")].to_numpy()
            # an overflow: refused; NaN (one observation) gets std 1
            _check_stats(mean[stats.index, j], np.where(np.isnan(s), 1.0, s), np.ones(len(s), bool),
                         lambda at: f"variable {variables[stats.index[at[0]]]!r}, column {col!r}")
            std[stats.index, j] = np.where(np.isfinite(s) & (s > 0), s, 1.0)
        scaler = Standardizer(mean, std, by="variable")
    v = torch.as_tensor(tok, dtype=torch.float32)
    if scaler is not None:
        v = scaler.transform(v, var)
        _check_standardised(v, tok, pad, lambda b, n, c: (
            f"id {_py(groups[b][0])!r}, variable {variables[int(var[b, n])]!r}, column {value_cols[c]!r} (time "
            f"{pos[b, n, 0]:g})", scaler.mean[int(var[b, n]), c], scaler.std[int(var[b, n]), c]))
    v[torch.as_tensor(pad)] = 0.0
    y, classes = _encode_labels(labels, like.classes if like is not None else classes, len(groups))
    y, targets = _standardize_targets(labels, y, classes, like, standardize_targets)
    tensors = dict(values=v, positions=torch.as_tensor(pos, dtype=torch.float64).transpose(1, 2).contiguous(),
                   pad_mask=torch.as_tensor(pad))
    if y is not None:
        tensors["labels"] = y
    return TokenDataset(standardizer=scaler, classes=classes, variables=list(variables),
                        ids=[k for k, _ in groups], target_standardizer=targets, **tensors)
