"""The model's training and evaluation beside the baselines' predictions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ...compendium import plan
from ...builders import from_long
from ...data import physionet as P
from ...masking import equalize, keep_groups, trim_padding
from ...model import RoMAEForPreTraining
from ...compendium.kept import fit_cached

from .profiles import SCORINGS, BOUND_QUANTILES, UNITS, RunConfig, Profile
from .records import hidden_rows


# ----------------------------------------------------------------------------- baselines

def baseline_predictions(df: pd.DataFrame, hidden: np.ndarray, train_mean: np.ndarray) -> dict[str, np.ndarray]:
    """Predictions (raw units) of the three baselines at the hidden rows of `df`, in row order."""
    vis, hid = df[~hidden], df[hidden]
    fallback = train_mean[hid.variable.to_numpy()]
    out = {"training mean": fallback.copy()}
    rec_mean = vis.groupby(["record_id", "variable"]).value.mean()
    idx = pd.MultiIndex.from_arrays([hid.record_id, hid.variable])
    rm = rec_mean.reindex(idx).to_numpy()
    out["record mean"] = np.where(np.isnan(rm), fallback, rm)
    lin = fallback.copy()
    groups = {k: (g.time.to_numpy(), g.value.to_numpy()) for k, g in vis.groupby(["record_id", "variable"])}
    hpos = np.arange(len(hid))
    for k, g in pd.Series(hpos).groupby([hid.record_id.to_numpy(), hid.variable.to_numpy()]):
        if k in groups:
            t, v = groups[k]
            lin[g.to_numpy()] = np.interp(hid.time.to_numpy()[g.to_numpy()], t, v)  # nearest at the edges
    out["linear interpolation"] = lin
    return out


def scores(pred: np.ndarray, true: np.ndarray, variable: np.ndarray, scaling: P.Scaling) -> tuple[float, np.ndarray,
                                                                                               np.ndarray]:
    """Pooled MSE on `scaling`'s scale, and per-variable sums of squared errors and counts."""
    err = ((pred - true) / scaling.scale[variable]) ** 2
    n_var = len(scaling.scale)
    return float(err.mean()), np.bincount(variable, err, n_var), np.bincount(variable, minlength=n_var)


# ----------------------------------------------------------------------------- RoMAE

def tokens(df: pd.DataFrame, scaling: P.Scaling, time_scale: float):
    """Long table -> TokenDataset: scalar tokens (values on `scaling`), positions (t x time_scale, variable)."""
    d = df.assign(v=scaling.transform(df.variable.to_numpy(), df.value.to_numpy()))
    return from_long(d, id="record_id", time="t", variable="variable", value="v", standardize=False,
                     time_scale=time_scale, variables=list(range(len(P.VARIABLES))))


def train_transform(unit: str):
    """The training batches' transform: trim common padding; for 'timepoint', HeTVAE's time-point masks."""
    if unit == "token":
        return trim_padding  # the model draws its 50 % token mask itself
    if unit != "timepoint":
        raise ValueError(f"unknown masking unit {unit!r}; choose one of {list(UNITS)}")

    def transform(batch):
        batch = trim_padding(batch)
        hidden = keep_groups(batch["positions"][:, 0], batch["pad_mask"], 0.5)
        return equalize(batch, hidden)

    return transform


def train(prof: Profile, run: RunConfig, data: dict, cache_dir=None, refresh=False, checkpoints=True,
          profile: str = "") -> dict:
    train_ds = tokens(data["train"], data["scalings"][run.scaling], run.time_scale)
    train_cfg = plan.fit_memory(run.train_config(), run.model_config(), train_ds.tensors["values"].shape[1], "pretrain",
                                profile, padded=plan.is_padded(train_ds))  # paper: the planned micro-batch
    key = dict(data="physionet2012", quantization=prof.quantization, scaling=run.scaling, time_scale=run.time_scale,
               train_unit=run.train_unit, max_train_records=run.max_train_records, transform="trim_padding+v1",
               values=f"winsorised at the {BOUND_QUANTILES} training quantiles")
    return fit_cached("physionet_model", RoMAEForPreTraining, run.model_config(), train_ds, train_cfg, key,
                      seed=run.seed, cache_dir=cache_dir, refresh=refresh, checkpoints=checkpoints,
                      transform=train_transform(run.train_unit))


@torch.no_grad()
def model_predictions(model: RoMAEForPreTraining, ds, hidden: np.ndarray, batch: int = 32) -> np.ndarray:
    """RoMAE's predictions (on its training scale) at the hidden rows, in the long table's row order.

    Records are batched by length (shortest first) so a batch carries little padding; each batch is cut to
    its longest record and equalised (`romae.masking.equalize`) to one hidden count."""
    model.eval()
    pad = ds.tensors["pad_mask"]
    mask = torch.zeros_like(pad)
    mask[~pad] = torch.tensor(np.asarray(hidden, dtype=bool))
    full = torch.zeros(pad.shape)
    order = (~pad).sum(1).argsort()
    for i in range(0, len(order), batch):
        idx = order[i: i + batch]
        b = trim_padding(dict(values=ds.tensors["values"][idx], positions=ds.tensors["positions"][idx],
                              pad_mask=pad[idx]))
        n = b["pad_mask"].shape[1]
        h = mask[idx, :n]
        e = equalize(b, h)
        pred, _ = model(e["values"], e["positions"], mask=e["mask"], pad_mask=e["pad_mask"])
        rec = torch.zeros(e["mask"].shape)
        rec[e["mask"]] = pred.reshape(-1).float()
        full[idx, :n] = torch.where(h, rec[:, :n], 0.0)
    return full[~pad].numpy()[hidden]


def _load(run: RunConfig, trained: dict) -> RoMAEForPreTraining:
    model = RoMAEForPreTraining(run.model_config())
    model.load_state_dict(trained["state_dict"])
    return model.eval()


def evaluate(prof: Profile, data: dict, models: dict[str, tuple[RunConfig, RoMAEForPreTraining]]) -> dict:
    """Every method on every (unit, draw), scored on both scales -> pooled MSE rows, per-variable errors
    (draw 0) and one example record's predictions (draw 0, token unit)."""
    test = data["test"]
    var, true, recorded = test.variable.to_numpy(), test.value.to_numpy(), test.raw.to_numpy()
    rows, per_var, example = [], [], None
    datasets = {name: tokens(test, data["scalings"][run.scaling], run.time_scale) for name, (run, _) in models.items()}
    for unit in UNITS:
        for draw in range(prof.mask_draws):
            hidden = hidden_rows(test, unit, seed=draw)
            preds = baseline_predictions(test, hidden, data["train_mean"])
            for name, (run, model) in models.items():
                z = model_predictions(model, datasets[name], hidden, prof.eval_batch)
                preds[name] = data["scalings"][run.scaling].inverse(var[hidden], z)
            t, v, raw = true[hidden], var[hidden], recorded[hidden]
            for method, p in preds.items():
                for norm, (scaling, inliers) in SCORINGS.items():
                    keep = ((raw >= data["bounds"][0, v]) & (raw <= data["bounds"][1, v])) if inliers else slice(None)
                    m, sse, cnt = scores(p[keep], t[keep], v[keep], data["scalings"][scaling])
                    rows.append(dict(method=method, norm=norm, unit=unit, draw=draw, mse=m, n_scored=int(cnt.sum())))
                    if draw == 0:
                        per_var.append(pd.DataFrame(dict(method=method, norm=norm, unit=unit, variable=list(P.VARIABLES),
                                                         sse=sse, n=cnt)))
            if draw == 0 and unit == "token":
                example = _example(test, hidden, preds)
    return dict(mse=pd.DataFrame(rows), per_variable=pd.concat(per_var, ignore_index=True), example=example)


def _example(test: pd.DataFrame, hidden: np.ndarray, preds: dict) -> dict:
    """The test record whose length is nearest the 90th percentile (a well-observed one): rows and predictions."""
    sizes = test.groupby("record_id").size()
    rid = int((sizes - sizes.quantile(0.9)).abs().idxmin())
    sel = (test.record_id == rid).to_numpy()
    rows = test[sel].assign(hidden=hidden[sel]).reset_index(drop=True)
    pos = np.flatnonzero(hidden)  # prediction index of each hidden row
    in_rec = sel[hidden]
    return dict(record_id=rid, rows=rows, preds={k: v[in_rec] for k, v in preds.items()}, hidden_pos=pos[in_rec])
