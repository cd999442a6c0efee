"""Evaluation metrics, from scikit-learn: accuracy, macro-F1 (the paper's "F-score" in Tables 2 and 4)
and MSE. Each takes (y_true, y_pred) as tensors or arrays; for the classification metrics y_pred may be
class indices [n] or scores / logits [n, n_classes] (the arg-max is taken).

    logits = romae.predict(model, test)
    romae.metrics.accuracy(test.tensors["labels"], logits)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import torch

from . import precheck


def _np(x) -> np.ndarray:
    return x.detach().cpu().numpy() if torch.is_tensor(x) else np.asarray(x)


def _finite(x: np.ndarray, what: str) -> None:
    """ValueError naming the first sample with a non-finite entry of a float array (argmax of NaN is class
    0, and a NaN label is a class of its own: either would give a number that means nothing)."""
    if x.dtype.kind not in "fc" or np.isfinite(x).all():
        return
    flat = x.reshape(len(x), -1) if x.ndim else x.reshape(1, 1)
    i = int(np.flatnonzero(~np.isfinite(flat).all(1))[0])
    raise ValueError(f"{what} must be finite; sample {i} holds {flat[i][~np.isfinite(flat[i])][0]}")


def _classes(y_true, y_pred) -> tuple[np.ndarray, np.ndarray]:
    t, p = _np(y_true), _np(y_pred)
    precheck.comparable_labels(t, p)  # class names against numbers: said how to compare like with like
    _finite(p, "predicted scores" if p.ndim == t.ndim + 1 else "predicted classes")
    _finite(t, "true classes")
    if p.ndim == t.ndim + 1:  # scores -> predicted class
        p = p.argmax(-1)
    if t.shape != p.shape:
        raise ValueError(f"y_true {t.shape} and predicted classes {p.shape} differ in shape")
    return t.reshape(-1), p.reshape(-1)


def accuracy(y_true, y_pred) -> float:
    """Share of correctly classified samples."""
    from sklearn.metrics import accuracy_score  # imported on use: `import romae` stays light

    return float(accuracy_score(*_classes(y_true, y_pred)))


def macro_f1(y_true, y_pred) -> float:
    """F1 averaged over the classes present in y_true or y_pred, unweighted (scikit-learn's macro avg,
    as in the `classification_report` the authors printed)."""
    from sklearn.metrics import f1_score

    return float(f1_score(*_classes(y_true, y_pred), average="macro", zero_division=0))


def mse(y_true, y_pred) -> float:
    """Mean squared error over every element."""
    t, p = _np(y_true).astype(np.float64), _np(y_pred).astype(np.float64)
    _finite(p.reshape(-1), "predictions")
    _finite(t.reshape(-1), "targets")
    if t.size != p.size:
        raise ValueError(f"y_true has {t.size} values, y_pred {p.size}")
    from sklearn.metrics import mean_squared_error

    return float(mean_squared_error(t.reshape(-1), p.reshape(-1)))


METRICS: dict[str, Callable] = {"accuracy": accuracy, "macro_f1": macro_f1, "mse": mse}


def resolve_metrics(metrics: Iterable | dict | None) -> dict[str, Callable]:
    """Names (from METRICS) or a {name: fn} dict -> {name: fn}; an unknown name is an error naming the choices."""
    if not metrics:
        return {}
    if isinstance(metrics, dict):
        return dict(metrics)
    if isinstance(metrics, str):
        metrics = [metrics]
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; choose from {', '.join(METRICS)} or pass {{name: fn}}")
    return {m: METRICS[m] for m in metrics}
