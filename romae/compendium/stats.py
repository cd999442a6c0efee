"""The statistics of the compendium: every interval it prints is a t interval with n - 1 degrees of freedom
(`interval`, `slope`, `difference`), and a training curve that spikes or diverges is said (`loss_flags`).

Re-exported by `romae.compendium.report`, where notebooks call them (`report.difference`, `report.loss_flags`).
"""

from __future__ import annotations

import math
import re

import pandas as pd


# --- training flags: a loss that spikes or diverges is said in the row -------------------------------------
SPIKE_FACTOR = 10.0  # a logged loss above 10x the median of all losses logged before it is a spike
ERRATIC_STEP = 0.3  # a curve whose typical step between logged losses is a factor 10**0.3 = 2 is erratic


def loss_flags(losses, spike: float = SPIKE_FACTOR, erratic: float = ERRATIC_STEP) -> str:
    """'' for a well-behaved training curve; else what is wrong, for the row's note and for the notebook to
    refrain from conclusions: 'diverged' (a non-finite loss, or the last tenth's median above the first
    tenth's), 'loss spikes' (after the first tenth, a loss above `spike` x the median of all before it),
    'erratic' (positive losses whose median |log10 step| between consecutive logged values after the first
    tenth exceeds `erratic`: jumping up and down by 2x and more with no trend; a smooth curve with 5 % noise
    scores about 0.02). `losses`: the logged training losses in order (at least 10 for these rules)."""
    import numpy as np

    x = np.asarray(list(losses), dtype=float).reshape(-1)
    if x.size == 0:
        return ""
    if not np.isfinite(x).all():
        return f"diverged: non-finite loss at log entry {int(np.argmin(np.isfinite(x)))} of {x.size}"
    tenth = max(1, x.size // 10)
    flags = []
    if x.size >= 10 and np.median(x[-tenth:]) > np.median(x[:tenth]):
        flags.append(f"diverged: median loss of the last tenth {np.median(x[-tenth:]):.3g} > first tenth's "
                     f"{np.median(x[:tenth]):.3g}")
    if x.size >= 10:
        before = np.array([np.median(x[:i]) for i in range(tenth, x.size)])
        ratio = x[tenth:] / np.maximum(before, np.finfo(float).tiny)
        n = int((ratio > spike).sum())
        if n:
            flags.append(f"loss spikes: {n} of {x.size} logged losses above {spike:g}x the median before them "
                         f"(largest {ratio.max():.3g}x)")
        if (x > 0).all():
            step = float(np.median(np.abs(np.diff(np.log10(x[tenth:])))))
            if step > erratic:
                flags.append(f"erratic: the median step between logged losses is a factor {10 ** step:.3g} "
                             f"(more than {10 ** erratic:.2g})")
    return "; ".join(flags)


# --- statistics: every interval the compendium prints is a t interval with n - 1 degrees of freedom --------
LEVEL = 0.95  # the confidence level of every interval and verdict


def t_quantile(df: int, level: float = LEVEL) -> float:
    """The two-sided t quantile: an interval mean +- t_quantile(n - 1) x se covers with probability `level`."""
    from scipy.stats import t

    if df < 1:
        raise ValueError(f"t_quantile(): needs at least 1 degree of freedom, got {df}")
    if not 0 < level < 1:
        raise ValueError(f"t_quantile(): level must be in (0, 1), got {level!r}")
    return float(t.ppf(0.5 + level / 2, df))


def outlying_seeds(runs, by: list[str], value: str, factor: float = 10.0) -> str:
    """Markdown naming the runs (one row each of `runs`, e.g. one per seed) whose positive `value` is more than
    `factor` x, or less than 1 / `factor` x, the median of its group (`by`), with the group's median and the
    mean of the others: a seed that did not converge is reported beside the mean it moves, never dropped.
    '' when there is none."""
    import pandas as pd

    if not factor > 1:
        raise ValueError(f"outlying_seeds(): factor must be > 1, got {factor!r}")
    missing = [c for c in [*by, value] if c not in runs.columns]
    if missing:
        raise ValueError(f"outlying_seeds(): no column(s) {missing} in {list(runs.columns)}")
    lines = []
    for key, g in runs.groupby(by, sort=False):
        x = pd.to_numeric(g[value], errors="coerce")
        med = float(x.median())
        if len(g) < 3 or not med > 0 or not (x > 0).all():
            continue
        far = (x > factor * med) | (x < med / factor)
        for i in g.index[far]:
            rest = x[~far]
            name = ", ".join(f"{c} {v}" for c, v in zip(by, key if isinstance(key, tuple) else (key,)))
            extra = ", ".join(f"{c} {g.at[i, c]}" for c in ("seed", "split") if c in g.columns)
            lines.append(f"- {name}{', ' + extra if extra else ''}: {value} {x[i]:.4g}, against the median "
                         f"{med:.4g} of the {len(g)} runs (the other {len(rest)}: mean {rest.mean():.4g}, "
                         f"{rest.min():.4g}-{rest.max():.4g})")
    if not lines:
        return ""
    return (f"**Runs far from the others of their setting** (more than {factor:g}x from its median, e.g. a seed "
            "that did not converge): reported, never dropped; the setting's mean and its interval include them.\n\n"
            + "\n".join(lines))


def interval(values, level: float = LEVEL) -> dict:
    """The t confidence interval of the mean of `values` (one per seed or fold): mean, se, n, df, low, high,
    level. One value has no interval (low = high = nan)."""
    import numpy as np

    x = np.asarray(values, dtype=float).reshape(-1)
    if x.size == 0 or not np.isfinite(x).all():
        raise ValueError(f"interval(): need finite values, got {x.tolist()}")
    mean = float(x.mean())
    if x.size < 2:
        return dict(mean=mean, se=float("nan"), n=1, df=0, low=float("nan"), high=float("nan"), level=level)
    se = float(x.std(ddof=1) / math.sqrt(x.size))
    half = t_quantile(x.size - 1, level) * se
    return dict(mean=mean, se=se, n=int(x.size), df=int(x.size - 1), low=mean - half, high=mean + half, level=level)


def slope(x, y, level: float = LEVEL) -> dict:
    """Least-squares line y = intercept + slope x with the t interval of the slope (n - 2 degrees of freedom):
    slope, intercept, se, low, high, r2, n, df, level. A claim on a slope's sign holds only when its interval
    excludes the other side. Needs 3 points of at least 2 distinct x."""
    import numpy as np

    x, y = np.asarray(x, dtype=float).reshape(-1), np.asarray(y, dtype=float).reshape(-1)
    if x.shape != y.shape or x.size < 3:
        raise ValueError(f"slope(): need the same number (>= 3) of x and y values, got {x.size} and {y.size}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("slope(): a value is not finite")
    sxx = float(((x - x.mean()) ** 2).sum())
    if sxx == 0:
        raise ValueError("slope(): all x values are equal")
    b = float(((x - x.mean()) * (y - y.mean())).sum() / sxx)
    a = float(y.mean() - b * x.mean())
    resid = y - (a + b * x)
    df = x.size - 2
    se = float(math.sqrt((resid ** 2).sum() / df / sxx))
    syy = float(((y - y.mean()) ** 2).sum())
    half = t_quantile(df, level) * se
    return dict(slope=b, intercept=a, se=se, low=b - half, high=b + half,
                r2=1 - float((resid ** 2).sum()) / syy if syy > 0 else 1.0, n=int(x.size), df=int(df), level=level)


def _interval_of(res: dict) -> dict:
    """The [low, high] at `level` of an `interval`, `slope` or `difference` result, for results.csv."""
    if not all(k in res for k in ("low", "high")):
        raise ValueError(f"interval must be report.interval(...), slope(...) or difference(...), got {res!r}")
    return dict(low=float(res["low"]), high=float(res["high"]), level=float(res.get("level", LEVEL)))


def difference(a, b, margin: float, names: tuple[str, str] = ("A", "B"), level: float = LEVEL) -> dict:
    """Is a paired comparison of two variants resolved at this scale? `a`, `b`: one number per seed (or fold;
    same order: a paired difference each); `margin`: the smallest difference that would matter, in the metric's
    units. Returns diff (mean of a - b), se, n, the t interval [low, high] at `level` (n - 1 degrees of freedom:
    with 2 pairs the 95 % interval is +- 12.7 standard errors) and a verdict: "resolved: A > B" / "resolved: A < B"
    when the interval excludes 0; "equal within +-margin" when it lies inside (-margin, margin); else "not resolved
    at this scale". One pair has no interval: "not resolved at this scale (1 pair)". Pairs that all differ by the
    same amount have a zero-width interval."""
    import numpy as np

    x, y = np.asarray(a, dtype=float).reshape(-1), np.asarray(b, dtype=float).reshape(-1)
    if x.shape != y.shape or x.size == 0:
        raise ValueError(f"difference(): need one value per seed for both variants, got {x.size} and {y.size}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("difference(): a per-seed value is not finite")
    if not math.isfinite(margin) or margin <= 0:
        raise ValueError(f"difference(): margin must be a finite number > 0, got {margin!r}")
    ci = interval(x - y, level)
    out = dict(diff=ci["mean"], se=ci["se"], n=ci["n"], margin=float(margin), low=ci["low"], high=ci["high"],
               level=level)
    return dict(out, verdict=_difference_verdict(out, names))


def _difference_verdict(res: dict, names: tuple[str, str] = ("A", "B")) -> str:
    if res["n"] < 2:
        return "not resolved at this scale (1 seed)"
    if res["low"] > 0 or res["high"] < 0:
        return f"resolved: {names[0]} {'>' if res['diff'] > 0 else '<'} {names[1]}"
    if -res["margin"] < res["low"] and res["high"] < res["margin"]:
        return f"equal within +-{res['margin']:g}"
    return "not resolved at this scale"


def difference_text(res: dict, unit: str = "", replicates: str = "seeds") -> str:
    """'+0.012 [95 % CI +0.004, +0.020] (t, 3 seeds): resolved: A > B': the interval the verdict used
    (`replicates`: what the pairs are, e.g. folds)."""
    u = f" {unit}" if unit else ""
    if res["n"] < 2:
        return f"{res['diff']:+.4g}{u} (1 pair, no interval): {res['verdict']}"
    return (f"{res['diff']:+.4g}{u} [{100 * res.get('level', LEVEL):g} % CI {res['low']:+.2g}, {res['high']:+.2g}] "
            f"(t, {res['n']} {replicates}): {res['verdict']}")


# verdicts printed by the rule this module used before the t interval: '+0.008 +- 0.0037 (2 se, 2 seeds): ...'
_OLD_RULE = re.compile(
    r"(?P<diff>[+-]?[0-9.]+(?:e[+-]?\d+)?) \+- (?P<two_se>[0-9.]+(?:e[+-]?\d+)?)(?P<unit> [^()]*?)? "
    r"\(2 se, (?P<n>\d+) (?P<what>[^)]*)\): (?P<verdict>resolved: [^;]*?|equal within \+-(?P<margin>[0-9.e+-]+)"
    r"|not resolved at this scale)(?=;|$)")


def rederive_verdicts(note: str) -> str:
    """A note written by the old rule (|mean| > 2 standard errors, whatever the number of seeds) with each verdict
    re-derived from the mean and standard error it printed, by the t interval with n - 1 degrees of freedom
    (`difference`); marked as re-derived. Other text is unchanged."""
    def redo(m):
        n, diff, se = int(m["n"]), float(m["diff"]), float(m["two_se"]) / 2
        if n < 2:
            return m.group(0)
        half = t_quantile(n - 1) * se
        names = ("A", "B")
        if m["verdict"].startswith("resolved: "):
            pair = m["verdict"][len("resolved: "):]
            for op in (" > ", " < "):
                if op in pair:
                    names = tuple(pair.split(op, 1)) if op == " > " else tuple(reversed(pair.split(op, 1)))
        margin = float(m["margin"]) if m["margin"] else 0.0  # the run's margin is printed only with "equal within"
        res = dict(diff=diff, se=se, n=n, margin=margin, low=diff - half, high=diff + half, level=LEVEL)
        verdict = _difference_verdict(res, names)
        unit = m["unit"] or ""
        return (f"{diff:+.4g}{unit} [{100 * LEVEL:g} % CI {res['low']:+.2g}, {res['high']:+.2g}] (t, {n} {m['what']}; "
                f"re-derived from the run's mean and standard error, which it judged by 2 se): {verdict}")
    return _OLD_RULE.sub(redo, note) if isinstance(note, str) else note


def loss_curve(history) -> list[float]:
    """The logged training losses of one training history (`fit`'s rows, or a DataFrame of them), in order:
    rows without a training loss (validation rows) or with a NaN one left out."""
    rows = history.to_dict("records") if isinstance(history, pd.DataFrame) else (history or [])
    return [float(r["loss"]) for r in rows if r.get("loss") is not None and not math.isnan(float(r["loss"]))]


def training_losses(results) -> list[list[float]]:
    """The logged training losses of each stage of each run, for `record(losses=)`: `results` are
    `recipe.pretrain_finetune` results (pre-training and fine-tuning histories) or `fit_cached` results
    (one history each). Stages without losses are left out."""
    keys = ("pretrain_history", "finetune_history")
    curves = [loss_curve(res.get(k)) for res in results
              for k in (keys if any(k in res for k in keys) else ("history",))]
    return [c for c in curves if c]
