"""The builders' checks of a user's series and tables (`romae.builders`): real numbers only, values within float32's
range that standardise to finite float32, finite training statistics, and times that are finite, within +-2**53 and
not merged by float32; each error names the sample (or id), step, channel and value."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from .inputs import MAX_POSITION


def _py(x):
    """A numpy scalar as the plain Python value (for readable messages)."""
    return x.item() if isinstance(x, np.generic) else x


def _real(x, name: str) -> np.ndarray:
    """x as a numpy array, in its own dtype; complex numbers (a complex numpy array, torch tensor or pandas column,
    or a list holding complex Python numbers) are refused with a TypeError naming `name`, instead of numpy's or
    torch's cast to real, which drops the imaginary part with only a warning."""
    a = np.asarray(x)
    if a.dtype.kind == "c" or (a.dtype == object and any(isinstance(e, (complex, np.complexfloating)) for e in a.flat)):
        raise TypeError(f"{name} is {a.dtype if a.dtype.kind == 'c' else 'complex'}; RoMAE takes real numbers: pass "
                        ".real or abs() yourself")
    return a


def _check_stats(mean: np.ndarray, std: np.ndarray, seen: np.ndarray, where) -> None:
    """Refuse non-finite training statistics (an overflow) of an observed channel: mean, std [..., C] float64,
    seen: which were observed; `where(index)` names one (e.g. "channel 2")."""
    bad = seen & ~(np.isfinite(mean) & np.isfinite(std))
    if bad.any():
        at = tuple(np.argwhere(bad)[0])
        raise ValueError(f"{where(at)}: the training mean and std are {mean[at]:g} and {std[at]:g} in float64 "
                         "(an overflow): rescale that channel")


def _check_standardised(v: torch.Tensor, vals: np.ndarray, pad: np.ndarray, where) -> None:
    """Refuse an observed real value [B, N, C] that the standardiser turned into a non-finite float32 (e.g. a huge
    value over a tiny training std); `where(b, n, c)` -> (its name, the mean and std used)."""
    bad = ~np.isnan(vals) & ~pad[..., None] & ~np.isfinite(v.numpy())
    if bad.any():
        b, n, c = (int(k) for k in np.argwhere(bad)[0])
        name, mean, std = where(b, n, c)
        raise ValueError(f"{name}: {vals[b, n, c]:g} standardises to {v[b, n, c].item()} in float32 (mean {mean:g}, "
                         f"std {std:g}); rescale that channel")


def _check_times(i: int, given: np.ndarray, stamps: np.ndarray, steps: np.ndarray, time_scale: float) -> None:
    """Refuse times of sample i that the model cannot tell apart: `given` as passed (kept steps), `stamps` the
    float64 positions (x time_scale), `steps` their step indices. Not finite or beyond +-MAX_POSITION (2**53);
    float32 times near Unix-second scale holding repeated values (rounded together before they got here); distinct
    times that became equal in float64 (x time_scale)."""
    bad = ~(np.abs(stamps) <= MAX_POSITION)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        what = f"{_py(given[j])!r}" + (f" x time_scale {time_scale:g} = {stamps[j]:g}" if time_scale != 1 else "")
        if not np.isfinite(stamps[j]):
            raise ValueError(f"sample {i}: the time of step {int(steps[j])} ({what}) is not finite")
        raise ValueError(f"sample {i}: the time of step {int(steps[j])} ({what}) is beyond +-2**53 (about 9.0e15), "
                         "where positions lose whole units and RoPE's angles all their digits; subtract a reference "
                         "time (e.g. t - t.min())")
    if given.dtype.kind == "f" and given.dtype.itemsize <= 4:
        top = float(np.abs(given).max(initial=0.0))
        n = len(np.unique(given))
        if top >= 2 ** 24 and n < len(given):
            raise ValueError(f"times of sample {i} are {given.dtype} near {top:.6g}, where {given.dtype} values are "
                             f"{float(np.spacing(given.dtype.type(top))):g} apart: its {len(given)} steps hold only {n} "
                             "distinct times, rounded together before they got here; pass float64 times, or subtract a "
                             "reference time (e.g. t - t.min()) before casting to float32")
    elif time_scale != 1 or given.dtype.kind not in "fiub" or given.dtype.itemsize > 8:
        n0, n1 = len(np.unique(given)), len(np.unique(stamps))
        if n1 < n0:
            raise ValueError(f"times of sample {i}: {n0} distinct times become {n1} in float64"
                             + (f" x time_scale {time_scale:g}" if time_scale != 1 else "")
                             + "; subtract a reference time (e.g. t - t.min()) or change time_scale")


def _check_long_times(df: pd.DataFrame, given: pd.Series, id: str, time: str, variable: str, time_scale: float) -> None:
    """from_long's times (df[time]: float64 x time_scale; `given`: the column as passed, on df's rows): finite and
    within +-MAX_POSITION; a float32 column at Unix-second scale with repeated (id, variable, time) rows (rounded
    together before they got here) and distinct times merged by x time_scale are refused, naming the id."""
    t = df[time].to_numpy()
    bad = ~(np.abs(t) <= MAX_POSITION)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        r, g = df.iloc[j].map(_py), _py(given.iloc[j])
        what = f"{g!r}" + (f" x time_scale {time_scale:g} = {r[time]:g}" if time_scale != 1 else "")
        if not np.isfinite(r[time]):
            raise ValueError(f"column {time!r} holds a non-finite time: {what} (id {r[id]!r}, variable {r[variable]!r})")
        raise ValueError(f"column {time!r}: the time {what} of id {r[id]!r}, variable {r[variable]!r}, is beyond +-2**53 "
                         "(about 9.0e15), where positions lose whole units and RoPE's angles all their digits; "
                         "subtract a reference time (e.g. t - t.min())")
    dtype = given.dtype
    if isinstance(dtype, np.dtype) and dtype.kind == "f" and dtype.itemsize <= 4:
        top = float(np.abs(given.to_numpy()).max(initial=0.0))
        twice = df.duplicated([id, variable, time])
        if top >= 2 ** 24 and twice.any():
            r = df[twice].iloc[0].map(_py)
            raise ValueError(f"column {time!r} is {dtype} near {top:.6g}, where {dtype} values are "
                             f"{float(np.spacing(dtype.type(top))):g} apart: id {r[id]!r} has variable {r[variable]!r} "
                             f"twice at time {r[time]:g}, distinct times rounded together before they got here; pass "
                             "float64 times, or subtract a reference time (e.g. t - t.min()) before casting to float32")
    elif time_scale != 1 or not isinstance(dtype, np.dtype) or dtype.kind not in "fiubmM" or dtype.itemsize > 8:
        before = pd.DataFrame({"id": df[id], "t": given}).groupby("id", sort=False)["t"].nunique()
        after = df.groupby(id, sort=False)[time].nunique()
        merged = after.to_numpy() < before.reindex(after.index).to_numpy()
        if merged.any():
            k = after.index[int(np.flatnonzero(merged)[0])]
            raise ValueError(f"column {time!r}, id {_py(k)!r}: {before[k]} distinct times become {after[k]} in float64"
                             + (f" x time_scale {time_scale:g}" if time_scale != 1 else "")
                             + "; subtract a reference time (e.g. t - t.min()) or change time_scale")

