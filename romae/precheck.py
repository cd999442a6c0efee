"""Mistakes refused where they are made, before any work on them (issue 53), with the value to use.

    before_fit(model, data, transform)   # fit, before its first step: n_outputs, task, token_dim, n_axes vs the data
    comparable_labels(y_true, y_pred)    # metrics: class names against numbers
    dropped_short(values, rows, drop)    # from_sequences(drop=): series left with fewer than MIN_STEPS steps

Each reads its inputs, raises (ValueError) or warns, and returns None: it changes no input, draws no random number and
computes nothing a result holds, so a result is the same with or without it (it is out of every code record:
`romae.compendium.staleness.NEVER_COMPUTES`). What it refuses would fail later anyway (mid-fit, inside scikit-learn),
or silently train on little.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

MIN_STEPS = 3  # fewer kept steps than this after drop= is (almost) no series: warned


def _labels(data):
    """The training labels of `data` as a tensor (a TokenDataset's, an ArrayDataset's, a GridDataset's or a
    TokenStore's), or None when it has none at hand."""
    labels = getattr(data, "labels", None)
    if labels is None and isinstance(getattr(data, "tensors", None), dict):
        labels = data.tensors.get("labels")
    if labels is None:
        return None
    try:
        return torch.as_tensor(labels)
    except (TypeError, ValueError, RuntimeError):
        return None


def _token_shape(data) -> tuple[int | None, int | None]:
    """(values per token, positional axes) of `data`'s tokens, each None when it cannot tell without building a
    batch."""
    dim, axes = getattr(data, "token_dim", None), getattr(data, "n_axes", None)
    tensors = getattr(data, "tensors", None)
    if isinstance(tensors, dict):
        values, positions = tensors.get("values"), tensors.get("positions")
        if dim is None and torch.is_tensor(values) and values.dim() == 3:
            dim = int(values.shape[-1])
        if axes is None and torch.is_tensor(positions) and positions.dim() == 3:
            axes = int(positions.shape[1])
    return _whole(dim), _whole(axes)


def _whole(v) -> int | None:
    """`v` as an int when it is a whole number (not a bool), else None."""
    return int(v) if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else None


def before_fit(model, data, transform=None) -> None:
    """Refuse, before training starts, a RoMAE model that cannot train on `data`: tokens of another `token_dim` or
    another number of positional axes (not checked when a `transform` reshapes the batches), a classifier with fewer
    outputs than the data's classes (e.g. `RoMAEForPrediction(cfg)` with the default n_outputs=1), a regressor on
    class labels or with another number of targets, a classifier on float targets. Each error names the value to use
    (`train.n_classes`, `train.token_dim`). Other models pass unchecked."""
    from .config import RoMAEConfig
    from .model import RoMAEForPrediction

    cfg = getattr(model, "cfg", None)
    if not isinstance(cfg, RoMAEConfig):
        return
    kind = type(model).__name__
    dim, axes = _token_shape(data) if transform is None else (None, None)
    if dim is not None and dim != cfg.token_dim:
        raise ValueError(f"{kind} takes tokens of token_dim={cfg.token_dim} values, but the training data's tokens "
                         f"hold {dim}: build it with RoMAEConfig(token_dim=train.token_dim), here {dim}")
    if axes is not None and axes != cfg.n_axes:
        raise ValueError(f"{kind} reads n_axes={cfg.n_axes} positional axes, but the training data's positions have "
                         f"{axes}: build it with RoMAEConfig(n_axes=train.n_axes), here {axes}")
    if not isinstance(model, RoMAEForPrediction) or cfg.head == "tokens":
        return
    labels = _labels(data)
    declared = getattr(data, "n_classes", None)  # the builder's classes (TokenDataset, GridDataset), if any
    declared = _whole(declared)
    if labels is None or labels.numel() == 0:
        return
    if cfg.task == "classification":
        if labels.is_floating_point():
            targets = hasattr(data, "classes") and data.classes is None  # a builder's regression targets
            if labels.dim() == 2 and labels.shape[1] == cfg.n_outputs and not targets:  # class probabilities
                return
            k = 1 if labels.dim() == 1 else int(labels[0].numel())
            raise ValueError(f"the training data's labels are {labels.dtype} {'targets' if k > 1 else 'values'} "
                             f"{list(labels.shape)}, not classes: for regression build the model with "
                             f"RoMAEConfig(task='regression', n_outputs={k}); for classes pass integer or named labels")
        if labels.is_complex() or labels.dtype == torch.bool:
            return  # the model names these itself
        top = int(labels.max())
        needed = max(top + 1, declared or 0)
        if needed > cfg.n_outputs:
            where = f"; the data has {declared} classes" if declared is not None else ""
            use = "n_outputs=train.n_classes" if declared is not None else "n_outputs"
            raise ValueError(f"class labels must lie in [0, n_outputs={cfg.n_outputs}), found {top} in the training "
                             f"data{where}: build the classifier with {use}, here {needed} (RoMAEConfig(..., "
                             f"n_outputs=...) or RoMAEForPrediction.from_pretrained(mae, n_outputs=...))")
        return
    if declared is not None and getattr(data, "classes", None) is not None:
        raise ValueError(f"{kind} regresses (task='regression'), but the training data holds class labels "
                         f"({declared} classes): for a classifier build it with RoMAEConfig(task='classification', "
                         f"n_outputs=train.n_classes), here {declared}")
    k = 1 if labels.dim() <= 1 else int(labels[0].numel())
    if k != cfg.n_outputs:
        raise ValueError(f"the training data has {k} regression target(s) per sample (labels {list(labels.shape)}), "
                         f"the model n_outputs={cfg.n_outputs}: build it with RoMAEConfig(task='regression', "
                         f"n_outputs={k})")


def _kind(a: np.ndarray) -> str | None:
    """'names' for text labels, 'numbers' for numeric ones, None for a mix or anything else."""
    if a.dtype.kind in "US":
        return "names"
    if a.dtype.kind in "biuf":
        return "numbers"
    if a.dtype.kind == "O" and a.size:
        kinds = {"names" if isinstance(x, str) else "numbers" if isinstance(x, (int, float, np.number)) else None
                 for x in a.flat}
        return kinds.pop() if len(kinds) == 1 else None
    return None


def comparable_labels(y_true: np.ndarray, y_pred: np.ndarray) -> None:
    """Refuse class names compared with numbers (scikit-learn's "Mix of label input types (string and number)"),
    saying how to get labels of one kind."""
    t, p = _kind(y_true), _kind(y_pred)
    if t == p or None in (t, p):
        return
    shown = ", ".join(repr(x) for x in (y_true if t == "names" else y_pred).reshape(-1)[:3].tolist())
    if t == "names":
        raise ValueError(f"y_true holds class names ({shown}, ...) but y_pred numbers (scores or class indices, "
                         "e.g. from predict(model, test)): compare like with like: the dataset's class indices, "
                         "test.labels of the TokenDataset you predicted on (test = from_sequences(..., labels=..., "
                         "like=train); test.classes names them), or the names against predict(model, test, "
                         "as_labels=True)")
    raise ValueError(f"y_pred holds class names ({shown}, ...; predict(..., as_labels=True)) but y_true numbers: "
                     "compare like with like: the names against the names the data was built from, or the "
                     "class indices (test.labels) against predict(model, test) without as_labels")


def dropped_short(values, rows, drop: float) -> None:
    """Warn when `from_sequences(drop=...)` left series with fewer than MIN_STEPS observed steps: `values` the
    series as given, `rows` their kept steps [T_kept, C]."""
    if not drop:
        return
    short = [i for i, r in enumerate(rows) if len(r) < MIN_STEPS <= len(values[i])]
    if short:
        i = short[0]
        warnings.warn(f"drop={drop:g} left {len(short)} of {len(rows)} series with fewer than {MIN_STEPS} observed "
                      f"time steps (e.g. sample {i}: {len(rows[i])} of {len(values[i])} kept); so few steps say "
                      "little about a series: use a smaller drop, or longer series", stacklevel=3)
