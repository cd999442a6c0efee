"""The notebook's `run`."""

from __future__ import annotations

import time

import matplotlib.pyplot as plt
import pandas as pd

from ...config import check_profile
from ...compendium.report import learned, record, save_figure, save_table
from .. import frequency

from .settings import EXPERIMENT, INITS, SOURCES, CURVE_STEPS, CHECK_SEED, NOT_COMPARED, control_config
from .first_update import starts, first_step, first_steps
from .training import predict_zero_mse, train_pieces
from .reading import (
    committed_quick, _source, _better, _piece, piece_scale, _losses, _zeros_per_seed, difference_table,
    _reproduction_check)
from .figures import plot_first_steps


# ----------------------------------------------------------------------------- the experiment

def run(profile: str = "smoke", reports_dir=None, cache_dir=None, checkpoints: bool = False,
        curve_steps: int | None = None, fresh_zeros: bool | None = None) -> dict:
    """Train both inits, compare, save the table and the figure, record the rows.

    `fresh_zeros` (default: True for smoke and paper, False for quick): train every zeros run here;
    False (quick only) takes the zeros numbers from the committed quick results and trains only Synthetic
    seed CHECK_SEED with zeros, to check that the code reproduces them. Returns {profile, table,
    mechanism (DataFrame), curves ({piece: {init: DataFrame}}), check (quick: the fresh zeros seed
    against the committed run, else None), runs ({init: train_pieces output}), fresh_zeros, seconds
    (wall-clock of the whole call)}. `checkpoints` (default off: nothing is written under <repo>/runs):
    see `interpolation.run`.
    """
    check_profile(profile)
    fresh = profile != "quick" if fresh_zeros is None else bool(fresh_zeros)
    if not fresh and profile != "quick":
        raise ValueError(f"committed zeros numbers exist for the quick profile only, not {profile!r}")
    t0 = time.perf_counter()
    steps = CURVE_STEPS[profile] if curve_steps is None else curve_steps

    # 1. the mechanism: first step and first steps, both inits fresh
    mech_rows, curves, started = [], {}, {}
    for init in INITS:
        for start in starts(profile, init):
            started[(init, start.name)] = start.model
            mech_rows.append(dict(piece=start.name, init=init, **first_step(start)))
            curves.setdefault(start.name, {})[init] = first_steps(start, steps)
    mechanism = pd.DataFrame(mech_rows)

    # 2. the runs
    runs = {"normal": train_pieces(profile, "normal", cache_dir, checkpoints)}
    if fresh:
        runs["zeros"] = train_pieces(profile, "zeros", cache_dir, checkpoints)
    else:
        runs["zeros"] = train_pieces(profile, "zeros", cache_dir, checkpoints, synthetic_seeds=(CHECK_SEED,),
                                     pieces=("synthetic",))
    committed = committed_quick() if profile == "quick" else {}
    check = _reproduction_check(runs["zeros"]["per_seed"][CHECK_SEED], committed) if profile == "quick" else None
    for init, r in runs.items():  # the mechanism's models are the ones the runs trained
        for piece, model in r["models"].items():
            if started[(init, piece)] != model:
                raise RuntimeError(f"{piece}, {init}: the mechanism's model config differs from the run's")

    # 3. the table
    rows = []
    for (setting, metric), normal in runs["normal"]["metrics"].items():
        src = _source(setting)
        old = committed.get((src, setting, metric))
        if fresh:
            zeros = runs["zeros"]["metrics"][(setting, metric)]
            how = f"fresh run ({profile}), same code path"
            if old is not None:
                how += f"; committed quick value {old[0]:.6g}"
        else:
            zeros = old[0] if old is not None else float("nan")
            how = (f"committed quick run (reports/results.csv, {old[2]} seed(s)), not re-run" if old is not None
                   else "committed quick row missing from reports/results.csv")
        if check is not None and (setting, metric) in check:
            c = check[(setting, metric)]
            how += (f"; fresh zeros seed {CHECK_SEED} {'reproduces' if c['reproduces'] else 'does NOT reproduce'}"
                    f" its committed per-seed value (|diff| {c['abs_diff']:.1e})")
        rows.append(dict(experiment=src, setting=setting, metric=metric, zeros=zeros, normal=normal, source=how))
    if not fresh:  # the fresh pair on the check seed: both inits trained here
        for key, zeros in runs["zeros"]["per_seed"][CHECK_SEED].items():
            rows.append(dict(experiment="table7_interpolation", setting=f"{key[0]}, seed {CHECK_SEED} only",
                             metric=key[1], zeros=zeros, normal=runs["normal"]["per_seed"][CHECK_SEED][key],
                             source=f"fresh run (quick), seed {CHECK_SEED}"))
    for (setting, metric), level in predict_zero_mse(control_config(profile, "normal")).items():
        rows.append(dict(experiment="fig3_frequency_retention", setting=setting,
                         metric=f"{metric} of predicting 0 (reference)", zeros=level, normal=level,
                         source="computed from the test series: the level of a model that has not learned"))
    for piece in mechanism.piece.unique():
        m = mechanism[mechanism.piece == piece].set_index("init")
        for metric in ("loss_step0", "grad_norm_step1", "grad_norm_mask_token_step1", "grad_norm_rest_step1",
                       "loss_after_1_step"):
            rows.append(dict(experiment="mechanism (first batch)", setting=f"{piece} ({profile} settings)",
                             metric=metric, zeros=float(m.loc["zeros", metric]), normal=float(m.loc["normal", metric]),
                             source="fresh, both inits"))
    table = pd.DataFrame(rows)
    table["better"] = [_better(r.metric, r.zeros, r.normal) if "reference" not in r.metric else NOT_COMPARED
                       for r in table.itertuples()]
    table["ratio"] = table.normal / table.zeros
    table = table[["experiment", "setting", "metric", "zeros", "normal", "better", "ratio", "source"]]
    table = table.rename(columns={"source": "zeros_source"})
    save_table(table, EXPERIMENT, reports_dir)

    differences = difference_table(runs, _zeros_per_seed(runs, committed, fresh),
                                   {(r.setting, r.metric): r.zeros for r in table.itertuples()
                                    if r.experiment in SOURCES and "seed " not in r.setting})
    verdicts = {(r.setting, r.metric): r.text for r in differences.itertuples()}

    # 4. result rows: every number computed here (committed zeros numbers are not recorded again), each with
    # its piece's scale; the control's time-domain rows with the trivial predictor of notebook 02
    note = f"[MASK] init ablation, {profile} settings of the source experiment"
    triv = frequency.trivial(control_config(profile, "normal"))  # the test series do not depend on the init
    for init in INITS:
        if fresh or init == "normal":
            for (setting, metric), value in runs[init]["metrics"].items():
                piece = _piece(setting)
                hs = runs[init]["histories"].get(piece, [])
                ok = None
                if piece == "raw-t control" and metric.startswith("time_mse_hidden"):
                    key = "one" if setting.startswith("1 mode") else "two"
                    col = "time_mse_noisy" if metric == "time_mse_hidden_mean" else "time_mse_clean"
                    ok = learned(value, float(triv[key][col].mean()), f"{triv['name']} ({setting.split(',')[0]})")
                extra = f"; normal - zeros: {verdicts[(setting, metric)]}" if (setting, metric) in verdicts else ""
                record(EXPERIMENT, f"{setting}, mask_token_init={init}", metric, value, profile=profile,
                       n_seeds=len(hs), scale=piece_scale(profile, piece, len(hs)), learned=ok, losses=_losses(hs),
                       note=f"{note} ({_source(setting)}){extra}", reports_dir=reports_dir)
        if not fresh:
            hs = runs[init]["histories"]["Synthetic"][:1] if init == "zeros" else \
                [h for s, h in zip(list(runs[init]["per_seed"]), runs[init]["histories"]["Synthetic"])
                 if s == CHECK_SEED]
            for (setting, metric), value in runs[init]["per_seed"][CHECK_SEED].items():
                record(EXPERIMENT, f"{setting}, seed {CHECK_SEED}, mask_token_init={init}", metric, value,
                       profile=profile, scale=piece_scale(profile, "Synthetic", 1), losses=_losses(hs),
                       note=f"{note} (table7_interpolation)", reports_dir=reports_dir)
        for r in mechanism[mechanism.init == init].itertuples():
            one_step = {k: v for k, v in piece_scale(profile, r.piece).items() if k in ("data", "model", "positions")}
            for metric in ("grad_norm_step1", "grad_norm_mask_token_step1", "loss_step0", "loss_after_1_step"):
                record(EXPERIMENT, f"{r.piece}, first batch, mask_token_init={init}", metric, getattr(r, metric),
                       profile=profile, scale=one_step, note=f"{note}; one step on the run's first batch, fixed mask",
                       reports_dir=reports_dir)

    fig = plot_first_steps(curves, profile)
    save_figure(fig, "fig_init_ablation_mask_token", reports_dir)
    plt.close(fig)
    return dict(profile=profile, table=table, mechanism=mechanism, curves=curves, check=check, runs=runs,
                differences=differences, fresh_zeros=fresh, seconds=time.perf_counter() - t0)
