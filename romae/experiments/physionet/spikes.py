"""The training's order of batches and the batches of gross values behind its loss spikes."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from ...config import TrainConfig
from ...data import physionet as P
from ...feeding import bucketed

from .profiles import GROSS_Z, RunConfig


# ----------------------------------------------------------------------------- the loss spikes, replayed

def training_order(lengths, cfg: TrainConfig):
    """The batches `romae.train.fit` draws on one process, replayed without training: yields (step, sample
    indices) for steps 1, 2, ...; epoch e shuffles with seed cfg.seed + e and, with cfg.length_buckets, batches
    records of similar length (`romae.feeding.bucketed`), as fit does. lengths: tokens per sample, in dataset order."""
    lengths = torch.tensor(np.asarray(lengths))
    n, bs = len(lengths), cfg.batch_size
    steps_per_epoch = math.ceil(n / bs)
    for epoch in range(cfg.epochs):
        gen = torch.Generator().manual_seed(cfg.seed + epoch)
        perm = torch.randperm(n, generator=gen)
        if cfg.length_buckets:
            perm = bucketed(perm, lengths, bs, cfg.length_buckets, gen)
        for b in range(steps_per_epoch):
            yield epoch * steps_per_epoch + b + 1, perm[b * bs: (b + 1) * bs].numpy()


def batch_extremes(data: dict, run: RunConfig) -> pd.DataFrame:
    """One row per training step of `run` on `data["train"]` (`training_order`; no training): the batch's most
    extreme recorded value (its record, variable, value and z-score on `run.scaling`, `z_recorded`), the largest
    |z| among the values the model is given (`max_z_trained`, after `winsorise`), and the batch's mean squared z,
    recorded and as trained: the loss of predicting the variable's mean at every token, which a spike's size
    follows. `logged`: the history row whose loss (the mean over `log_every` steps) holds the step."""
    tr, sc, cfg = data["train"], data["scalings"][run.scaling], run.train_config()
    ids = np.sort(tr.record_id.unique())  # the dataset's sample order (`from_long`: sorted ids)
    pos = np.searchsorted(ids, tr.record_id.to_numpy())
    var = tr.variable.to_numpy()
    n = np.bincount(pos, minlength=len(ids))
    per = {}
    for name, col in (("recorded", "raw"), ("trained", "value")):
        z = sc.transform(var, tr[col].to_numpy())
        az = pd.Series(np.abs(z))
        top = az.groupby(pos).idxmax().reindex(range(len(ids))).to_numpy()  # the row of each record's largest |z|
        per[name] = dict(z=z, top=top, max=np.abs(z[top]), sum2=np.bincount(pos, z ** 2, len(ids)))
    total = cfg.epochs * math.ceil(len(ids) / cfg.batch_size)
    rows = []
    for step, idx in training_order(n, cfg):
        rec, tra = per["recorded"], per["trained"]
        row = rec["top"][idx[np.argmax(rec["max"][idx])]]
        rows.append(dict(step=step, logged=min(math.ceil(step / cfg.log_every) * cfg.log_every, total),
                         record_id=int(ids[pos[row]]), variable=P.VARIABLES[var[row]],
                         recorded=float(tr.raw.iloc[row]), z_recorded=float(rec["z"][row]),
                         max_z_trained=float(tra["max"][idx].max()),
                         mean_z2_recorded=float(rec["sum2"][idx].sum() / n[idx].sum()),
                         mean_z2_trained=float(tra["sum2"][idx].sum() / n[idx].sum())))
    return pd.DataFrame(rows)


def gross_batches(res: dict) -> pd.DataFrame:
    """The training batches holding a gross recording error (a recorded |z| > GROSS_Z), most extreme first."""
    b = res["batches"]
    return b[b.z_recorded.abs() > GROSS_Z].sort_values("z_recorded", key=np.abs, ascending=False,
                                                       kind="stable").reset_index(drop=True)


def spike_text(res: dict) -> str:
    """What the replayed batches say about the loss spikes, and what winsorising leaves (generated text)."""
    b, run = res["batches"], res["runs"]["RoMAE"]
    g = gross_batches(res)
    med = b.mean_z2_recorded.median()
    lines = [f"- Replayed ({len(b)} steps of `{res['profile_name']}`, seed {run.seed}, length buckets "
             f"{run.length_buckets}; no training): "]
    if g.empty:
        lines[0] += f"no training batch holds a recorded value with |z| > {GROSS_Z:g}."
    else:
        recs = g.groupby(["record_id", "variable"], sort=False).agg(value=("recorded", "first"),
                                                                   z=("z_recorded", "first"))
        worst = ", ".join(f"{r} ({v} {x.value:g}, z = {x.z:,.0f})" for (r, v), x in recs.head(4).iterrows())
        lines[0] += (f"{len(g)} of the {len(b)} training batches hold a recorded value with |z| > {GROSS_Z:g}, from "
                     f"{len(recs)} record(s): {worst}{', ...' if len(recs) > 4 else ''}. Their batches' mean squared "
                     f"z reaches {g.mean_z2_recorded.max():,.0f}, against a median of {med:.2f} over all batches: "
                     f"a loss spike of that order whenever the model's mask hides the value. They fall into "
                     f"{g.logged.nunique()} of the {b.logged.nunique()} logged loss windows (steps "
                     f"{', '.join(str(s) for s in sorted(g.logged.unique()))}).")
    worst_t = b.max_z_trained.max()
    lines.append(f"- As trained (winsorised at the anomaly bounds): the largest |z| of any training value is "
                 f"{worst_t:.1f}, the largest batch mean squared z {b.mean_z2_trained.max():.2f} "
                 f"({b.mean_z2_trained.max() / b.mean_z2_trained.median():.1f}x the median batch's).")
    for name, flag in res.get("flags", {}).items():
        lines.append(f"- {name}'s training loss: " + (f"still flagged ({flag})." if flag else
                                                      "no loss spike or divergence flagged."))
    return "\n".join(lines)
