"""The notebook's `run`, its records and reading."""

from __future__ import annotations

import json
import math

import pandas as pd

from ...compendium import report
from ...compendium.report import learned, loss_flags, record, save_table, scale

from .profiles import EXPERIMENT, FIG4, FrequencyConfig, config, control_config
from .training import train_model
from .scoring import per_case, trend_fit, trivial, evaluate_config


def positions_label(position_scale: float) -> str:
    """How positions were made from the times t in [0, 1]: 't' (raw, the authors') or 't x 99'."""
    return "t" if position_scale == 1.0 else f"t x {position_scale:g}"


def run_scale(cfg: FrequencyConfig) -> dict:
    """A row's scale against the `paper` profile (App. B.4: RoMAE-tiny, 10,000 series, 200 epochs, raw t):
    training series, epochs, model (encoder / decoder) and positions."""
    p = config("paper")
    return scale(data=(cfg.n_train, p.n_train), epochs=(cfg.epochs, p.epochs),
                 model=(f"encoder {cfg.encoder}, decoder {cfg.decoder}", f"encoder {p.encoder}, decoder {p.decoder}"),
                 positions=(positions_label(cfg.position_scale), positions_label(p.position_scale)))


METRIC_COLUMNS = (("time_mse_hidden_mean", "time_mse_noisy"), ("time_mse_hidden_clean_mean", "time_mse_clean"),
                  ("fft_mse_mean", "fft_mse"), ("fft_bin_mse_mean", "fft_bin_mse"))


F_MIN = 9  # Hz: the paper's 'approximately linear growth above 9 Hz' (the slope checks' range)


def _learned_on(frame: pd.DataFrame, trivial: dict, key: str, setting: str, where=None) -> dict:
    """`learned` for the model's per-series frame of mode `key` against the trivial predictor's on the same series,
    all of them or those where the boolean Series `where` (aligned with `frame`) holds; the two frames hold the
    same test series in the same order (raises if they do not)."""
    other = trivial[key]
    if len(other) != len(frame) or not ((other.f1.values == frame.f1.values).all()
                                        and (other.f2.values == frame.f2.values).all()):
        raise ValueError(f"the trivial predictor's {key}-mode frame ({len(other)} series) is not the model's "
                         f"({len(frame)} series, same frequencies in the same order)")
    keep = slice(None) if where is None else where.values
    return learned(float(frame.time_mse_noisy.values[keep].mean()), float(other.time_mse_noisy.values[keep].mean()),
                   f"{trivial['name']} (time-domain MSE on hidden points vs noisy values, {setting})")


def _record_variant(ev: dict, suffix: str, profile: str, note: str, reports_dir, *, scale: dict, trivial: dict,
                    losses=None) -> list[dict]:
    """Record one model's rows (one and two modes, the Figure 3 and 4 slope checks) -> the recorded rows.
    Every row carries `learned`: the model's time-domain MSE on the hidden points (vs noisy values) against the
    trivial predictor's (`trivial`) on the series the row reads: a mode's mean rows on all its series, a slope
    check on the series its line is fitted to (f >= 9 Hz; two modes: the pair's higher frequency >= 9 Hz), so
    that a slope over frequencies the model does not reconstruct better than the trivial predictor is not
    judged (`_learned_on`)."""
    rows = []
    for setting, key in (("1 mode", "one"), ("2 modes", "two")):
        frame = ev[key]
        ok = _learned_on(frame, trivial, key, setting)
        for metric, col in METRIC_COLUMNS:
            rows.append(record(EXPERIMENT, setting + suffix, metric, frame[col].mean(), ours_std=frame[col].std(ddof=0),
                               profile=profile, scale=scale, note=note, learned=ok, losses=losses,
                               reports_dir=reports_dir))
        # the claim holds only when the slope's 95 % interval lies above 0 (`interval`: the summary reads it)
        if key == "one":
            fit = trend_fit(frame, "fft_mse", F_MIN)
            if fit is not None:
                ok_fit = _learned_on(frame, trivial, key, f"{setting}, f >= {F_MIN} Hz", frame.f1 >= F_MIN)
                rows.append(record(EXPERIMENT, "1 mode, f >= 9 Hz" + suffix, "fft_mse_slope_per_hz", fit["slope"],
                                   profile=profile, scale=scale, learned=ok_fit, losses=losses, reports_dir=reports_dir,
                                   interval=fit, note=f"least-squares slope of the per-frequency mean over {fit['n']} "
                                   f"frequencies; R^2 = {fit['r2']:.2f}; {note}"))
        else:  # Figure 4: the same check with two modes, against each series' higher frequency
            higher = frame[["f1", "f2"]].max(axis=1)
            fit = trend_fit(frame.assign(f1=higher), "fft_mse", F_MIN)
            if fit is not None:
                ok_fit = _learned_on(frame, trivial, key, f"{setting}, higher f >= {F_MIN} Hz", higher >= F_MIN)
                rows.append(record(FIG4, "2 modes, higher f >= 9 Hz" + suffix, "fft_mse_slope_per_hz", fit["slope"],
                                   profile=profile, scale=scale, learned=ok_fit, losses=losses, reports_dir=reports_dir,
                                   interval=fit, note=f"least-squares slope of the mean per higher frequency of the "
                                   f"pair over {fit['n']} frequencies; R^2 = {fit['r2']:.2f}; {note}"))
    return rows


status_table = report.status_table  # the summary's reading of this run's rows


def run(profile: str = "smoke", reports_dir=None, cache_dir=None, refresh: bool = False,
        checkpoints: bool | None = None) -> dict:
    """Train (cached), evaluate (cached), record result rows and save `table_b4_frequency_errors`.

    Returns {profile, config, one, two (per-series frames), table, example, history, train_seconds, steps, snr,
    flags (the training's loss flags, '' if none), learned {1 mode, 2 modes and each slope check's setting: its
    gate}, trivial (the trivial predictor's per-series frames, `trivial`), status (the Figure 3 / 4 checks as the
    summary reads them), control}; `control` (profiles with cfg.control) holds the same for the raw-t model, else
    None.
    `checkpoints` (default: on for quick and paper, off for smoke): see `train_model`.
    """
    cfg = config(profile)
    checkpoints = profile != "smoke" if checkpoints is None else checkpoints
    variants = [("", cfg)]
    if cfg.control and cfg.position_scale != 1.0:
        variants.append((", raw t (control)", control_config(cfg)))
    base = trivial(cfg)  # the control has the same test series (only the positions differ)
    out, recorded = {}, []
    for suffix, c in variants:
        trained = train_model(c, cache_dir=cache_dir, refresh=refresh, checkpoints=checkpoints, profile=profile)
        ev = evaluate_config(c, trained, cache_dir=cache_dir, refresh=refresh)
        losses = [row["loss"] for row in trained["history"] if row.get("loss") is not None
                  and not math.isnan(row["loss"])]
        note = (f"positions = {positions_label(c.position_scale)} (the paper: "
                f"{positions_label(config('paper').position_scale)}); {c.n_train} series x {c.epochs} epochs, "
                f"decoder {c.decoder}; {len(ev['one'])} one-mode and {len(ev['two'])} two-mode test series")
        rows = _record_variant(ev, suffix, profile, note, reports_dir, scale=run_scale(c), trivial=base,
                               losses=losses)
        recorded += rows
        got = {r["setting"]: json.loads(r["learned"]) for r in rows  # each mode's gate, then each slope check's
               if r["metric"] in ("time_mse_hidden_mean", "fft_mse_slope_per_hz")}
        out[suffix] = dict(profile=profile, config=c, **ev,
                           table=pd.concat([per_case(ev["one"]), per_case(ev["two"])], ignore_index=True),
                           history=pd.DataFrame(trained["history"]), train_seconds=trained["seconds"],
                           steps=trained["steps"], flags=loss_flags(losses), trivial=base,
                           learned={k.removesuffix(suffix): v for k, v in got.items()})
    main = out[""]
    table = main["table"].assign(positions=positions_label(cfg.position_scale))
    if len(out) > 1:  # the saved table holds both variants; res["table"] the main model's rows only
        table = pd.concat([table, out[variants[1][0]]["table"].assign(positions="t (raw, control)")],
                          ignore_index=True)
    save_table(table, "table_b4_frequency_errors", reports_dir)
    record(EXPERIMENT, "training set", "snr", main["snr"], profile=profile,
           scale=scale(data=(cfg.n_train, config("paper").n_train)),
           note="mean(clean^2) / noise variance; the paper quotes 43.1", reports_dir=reports_dir)
    return {**main, "status": status_table(recorded), "control": out[variants[1][0]] if len(out) > 1 else None}


def reading(res: dict) -> str:
    """Markdown lines stating what this run found, from its recorded rows (no hand-typed result): whether each
    model beat the trivial predictor, the Figure 3 / 4 checks as the summary reads them, and training flags
    (no conclusion is drawn from a flagged run)."""
    lines = [f"**Profile `{res['profile']}`.** Trivial predictor: {res['trivial']['name']}."]
    for r, name in ((res, f"positions {positions_label(res['config'].position_scale)}"),
                    (res.get("control"), "raw-t control")):
        if r is None:
            continue
        for setting, info in r["learned"].items():
            verdict = "learned" if info["ok"] else "did not learn"
            lines.append(f"- {name}, {setting}: {verdict} (time-domain MSE {info['model']:.4g} against "
                         f"{info['trivial']:.4g}; learned means <= {info['factor']:g}x)")
        if r["flags"]:
            lines.append(f"- {name}: TRAINING FLAG: {r['flags']}; no conclusion is drawn from this run")
    for r in res["status"].itertuples():
        seen = "" if r.measured == r.status.split(" (")[0] else f" (measured: {r.measured})"
        lines.append(f"- {r.setting}: slope {r.ours:.3g} per Hz -> **{r.status}**{seen}")
    if res["status"].empty:
        lines.append("- no Figure 3 / 4 check recorded (fewer than 3 test frequencies >= 9 Hz)")
    return "\n".join(lines)
