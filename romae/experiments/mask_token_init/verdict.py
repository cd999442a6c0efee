"""The conclusion, from the results and the training's flags."""

from __future__ import annotations

from ...compendium.report import loss_flags

from .settings import INITS, SOURCES, CHECK_SEED, CONTROL, TOLERANCE, NOT_COMPARED
from .reading import _losses, MARGIN


# ----------------------------------------------------------------------------- the reading

def training_flags(res: dict) -> dict:
    """{(init, piece, run index): `report.loss_flags`} of every run trained here whose loss spiked or diverged."""
    out = {}
    for init, r in res["runs"].items():
        for piece, hs in r["histories"].items():
            for k, losses in enumerate(_losses(hs)):
                flag = loss_flags(losses)
                if flag:
                    out[(init, piece, k)] = flag
    return out


LEARNED = 0.5  # the raw-t control "learns" when its 1-mode time MSE is below this share of predicting 0


CLOSE = 1e-3  # the prose counts a metric for an init only when it is lower by more than this share


def conclusion(res: dict) -> str:
    """Markdown sentences stating what the run found, computed from its table (no hand-typed numbers)."""
    t, profile = res["table"], res["profile"]
    runs = t[t.experiment.isin(SOURCES) & (t.better != NOT_COMPARED) & ~t.setting.str.contains("seed ")]
    gap = (runs.normal - runs.zeros).abs() / runs[["zeros", "normal"]].abs().max(axis=1)
    n_normal = int(((runs.better == "normal") & (gap > CLOSE)).sum())
    n_zeros = int(((runs.better == "zeros") & (gap > CLOSE)).sum())

    def row(setting, metric):
        r = t[(t.setting == setting) & (t.metric == metric)]
        return r.iloc[0] if len(r) else None

    lines = [f"**Profile `{profile}`.** Over the {len(runs)} error metrics of the three experiments, MAE's "
             f"N(0, 0.02) [MASK] is lower by more than {CLOSE:.1%} on {n_normal}, the authors' zeros on {n_zeros}, "
             f"and the two are within {CLOSE:.1%} on {len(runs) - n_normal - n_zeros}."]
    diffs = res.get("differences")
    if diffs is not None and len(diffs):
        counts = diffs.verdict.str.replace(r" \(1 seed\)", "", regex=True).value_counts()
        lines[0] += (" Paired over seeds (normal - zeros, `report.difference`, margin "
                     f"{MARGIN:.0%} of the zeros value): " + ", ".join(f"{n} {v}" for v, n in counts.items())
                     + ". A lower number counts for an init only where the difference is resolved.")
    verdict = {} if diffs is None else {(r.setting, r.metric): r.text for r in diffs.itertuples()}
    for setting, metric in (("Spiral", "rmse_clean"), ("Synthetic, 3-10 observed", "mse_noisy"),
                            ("1 mode" + CONTROL, "time_mse_hidden_mean"), ("2 modes" + CONTROL, "time_mse_hidden_mean")):
        r = row(setting, metric)
        if r is not None:
            lines.append(f"- {setting}, `{metric}`: zeros {r.zeros:.4g}, normal {r.normal:.4g} "
                         f"({100 * (r.ratio - 1):+.1f} %)"
                         + (f"; normal - zeros {verdict[(setting, metric)]}" if (setting, metric) in verdict else "")
                         + ".")
    ref = row("1 mode" + CONTROL, "time_mse_hidden_mean of predicting 0 (reference)")
    ctl = row("1 mode" + CONTROL, "time_mse_hidden_mean")
    if ref is not None and ctl is not None:
        learns = {init: getattr(ctl, init) < LEARNED * ref.zeros for init in INITS}
        lines.append(f"- The raw-t control (1 mode) sits at {ctl.zeros / ref.zeros:.0%} of the loss of predicting 0 "
                     f"with zeros and at {ctl.normal / ref.normal:.0%} with normal: it "
                     + ("learns with neither init" if not any(learns.values()) else
                        "learns with normal only" if learns["normal"] and not learns["zeros"] else
                        "learns with zeros only" if learns["zeros"] else "learns with both inits")
                     + f" (learns = below {LEARNED:.0%} of that level).")
    mech = t[(t.experiment == "mechanism (first batch)")]
    g = mech[mech.metric == "grad_norm_step1"]
    share = (mech[mech.metric == "grad_norm_mask_token_step1"].zeros.values / g.zeros.values).min()
    lines.append(f"- Mechanism: the first step's gradient norm is {(g.zeros / g.normal).min():.2g}-"
                 f"{(g.zeros / g.normal).max():.2g} times larger with zeros "
                 f"({g.zeros.min():.2g}-{g.zeros.max():.2g} against {g.normal.min():.2g}-{g.normal.max():.2g}); "
                 f"the [MASK] token's share of the zeros norm is at least {share:.4f}.")
    before, after = (mech[mech.metric == m].set_index("setting") for m in ("loss_step0", "loss_after_1_step"))
    for init in INITS:
        up = [s.split(" (")[0] for s in before.index if after.loc[s, init] > before.loc[s, init]]
        lines.append(f"- After one step on the first batch the loss rises with {init} on "
                     + (", ".join(up) if up else "no piece") + f" ({len(up)} of {len(before)}).")
    if res.get("check"):
        diffs = [c["abs_diff"] for c in res["check"].values()]
        ok = all(c["reproduces"] for c in res["check"].values())
        source = ("every zeros run trained here" if res.get("fresh_zeros") else "committed quick results")
        lines.append(f"- Zeros numbers: {source}; the fresh zeros Synthetic seed {CHECK_SEED} "
                     + ("reproduces" if ok else "does **not** reproduce")
                     + f" its committed values (largest |difference| {max(diffs):.1e}, tolerance {TOLERANCE:g}).")
    flags = training_flags(res)
    lines.append("- Training flags: " + ("none: no run trained here spiked or diverged." if not flags else
                 "; ".join(f"{piece} ({init}, run {k + 1}): {f}" for (init, piece, k), f in flags.items())
                 + ". No conclusion is drawn from a flagged run."))
    if profile == "smoke":
        lines.append("- `smoke` trains a few steps of 2-block encoders: these numbers only show that the pipeline "
                     "runs; the comparison needs `quick`.")
    return "\n".join(lines)
