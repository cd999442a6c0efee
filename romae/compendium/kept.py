"""Trainings and evaluations that outlive the process: the results cache, then the committed record of trainings.

    result = kept("spiral_eval", key, compute)             # cached, and kept in the record when one is open
    trained = fit_cached("pendulum_model", RoMAEForPrediction, cfg, data, train_cfg, key, seed=0)
    res = pretrain_finetune_kept("uea_BasicMotions", train, test, model_cfg, pretrain=..., finetune=..., n_outputs=4,
                                 seed=69, key={"data": "..."})

`kept` is `romae.compendium.cache.cached` for a training (or an evaluation kept beside one): it looks in the local results
cache, then in the committed record (`romae.compendium.trainings`), and only then computes, measuring the wall time
and peak memory, and writes both. `fit_cached` trains a model with `romae.train.fit` that way; its key holds the
model and training configs, what the caller says of the data, and a hash of the whole training data
(`romae.feeding.data_fingerprint`), so data that differs in any value is another training.

A key's last part is the code the result ran, by the rule of `romae.compendium.staleness`: the closure of its roots
(for `fit_cached`: `fit_cached` itself, `fit`, the model's class, the dataset's class and whatever else fit is handed;
for `kept`: the function computed and the package functions on the call stack, or the `roots` given), each statement
vouched for by a numerics workload that ran it or hashed. The record of it is the twin's `code_of`.
"""

from __future__ import annotations

import json
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable

import torch

from .. import recipe, runtime, storage
from ..config import RoMAEConfig, TrainConfig
from ..feeding import ArrayDataset, data_fingerprint
from ..train import fit
from . import cache, staleness, terminal, trainings, travel

RUNS = Path(__file__).resolve().parents[2] / "runs"  # checkpoints of trainings that resume (git-ignored)


def kept(name: str, config: Any, compute: Callable[[], Any], cache_dir=None, refresh: bool = False, *,
         require: tuple[str, ...] = (), planned: float | None = None, roots=None, depth: int = 2,
         more: Callable[[], dict] | None = None) -> Any:
    """compute()'s result for `config` and the code that produces it: from the results cache, else from the committed
    record of trainings (an entry that verifies, `trainings.check`, with every member of `require`; one set aside is
    said in the terminal and trained again), else computed, measured and written to both (the
    record only while one is open, `trainings.open_folder`). The device it ran on is noted (`trainings.devices`).
    `roots`: what the result runs (places or package objects, `romae.compendium.staleness`); default: `compute` and
    the package functions on the call stack from `depth` frames up. `more()`: what else the record's twin says of it
    (a training's pieces)."""
    if runtime.dry_run():
        return compute()
    folder = Path(cache_dir) if cache_dir else storage.CACHE
    code, made_of = cache.code_of(compute, roots, depth + 1)
    key = cache.key_of(name, config, code)
    if not refresh:
        found, result = storage.lookup(folder, key)
        if found:
            trainings.ran_on(_device_of(folder / f"{key}.json"))
            return result
        found, result = trainings.load(key, require)
        if found:
            return result
    with trainings.measured() as facts:
        result = compute()
    meta = {"config": json.loads(storage.key_json(config)), "code": code, "code_of": made_of,
            "device": trainings.ran_on()}
    storage.store(folder, key, result, meta)
    trainings.save(key, result, dict({k: v for k, v in meta.items() if k != "device"}, facts=facts,
                                     planned_seconds=planned, **(more() if more is not None else {})))
    return result


def _device_of(twin: Path) -> str | None:
    """The device a results-cache entry's twin names (a training's), or None (older entries, other results)."""
    try:
        device = json.loads(twin.read_text()).get("device")
    except (OSError, ValueError, AttributeError):
        return None
    return device if isinstance(device, str) and device else None


# ----------------------------------------------------------------------------- trainings with fit

def seconds_of(history: list[dict], fallback: float) -> float:
    """Training time of a run from its history (the last row's `seconds` counts across resumes), so a run
    that was resumed, or found finished, reports the time it really took; `fallback` if it logged none."""
    times = [r["seconds"] for r in history if "seconds" in r]
    return float(times[-1]) if times else fallback


def fit_cached(name: str, model_cls, model_cfg, data, cfg: TrainConfig, key: dict, *, seed: int,
               cache_dir=None, refresh: bool = False, checkpoints: bool = False,
               pretrained=None, need_weights: bool = False, **fit_kwargs) -> dict:
    """Train `model_cls(model_cfg)` on `data` (a dataset, e.g. an ArrayDataset or a TokenStore, or a dict
    of tensors), or load the result -> {state_dict, history, steps, seconds, run_id}.

    `key` names the data (and anything else that changes the model); the model and training configs and a hash of
    the whole training data are added to it, minus what does not change the result (the progress bar, the
    micro-batch, the checkpoint schedule). `checkpoints`: keep checkpoints and history.jsonl in
    <repo>/runs/<name>-<hash>/ so an interrupted run resumes (always, when cfg.checkpoint_every is set: the plan's
    schedule for the paper profile); `refresh` retrains from scratch.
    `pretrained`: encoder weights loaded with `model.load_encoder` before training (the key must name
    them, e.g. by the pre-training's run id), or a function returning them, called only if this trains.
    Other keywords (val_data, metrics) go to `fit`, with the terminal's progress lines of `make reproduce`.

    A finished training is kept (`kept`): in the committed record while one is open. Large weights are not kept, so
    a result found there may have no `state_dict`; `need_weights`: the caller needs them (it evaluates the model), so
    such an entry is trained again. Callers store what they compute from the weights as a kept result of its own.
    """
    rt = runtime.current()
    # micro_batch is how the batch goes through memory, not what is learnt (equal up to rounding): a run
    # planned for another GPU's memory is the same run; cuda_graphs is how steps are launched (equal up to rounding);
    # processes (a planning fact) counts once set
    train = {k: v for k, v in cfg.to_dict().items()
             if k not in ("progress", "micro_batch", "checkpoint_every", "cuda_graphs")}
    if train["processes"] is None:
        del train["processes"]
    data_ = ArrayDataset(**data) if isinstance(data, dict) else data  # a dict of tensors, or a dataset
    key = dict(key, model=model_cfg.to_dict(), train=train, init_seed=seed,
               data_content=None if rt.dry_run else data_fingerprint(data_))
    if rt.precision is not None and rt.precision != ("bf16" if cfg.bf16 else "fp32"):
        key["precision"] = rt.precision  # a named deviation: another result
    # the code it runs: fit_cached, fit, the model's and the data's classes, and whatever else fit is handed
    roots = [fit_cached, fit, model_cls, data_, pretrained, *_objects(fit_kwargs)]
    made_of = staleness.record([r for r in roots if r is not None])
    code = staleness.code_id(made_of)
    run_id = f"{name}-{cache.config_hash(dict(key, code=code))}"
    checkpoints = checkpoints or cfg.checkpoint_every is not None  # a schedule asked for (romae.compendium.plan): kept
    out_dir = RUNS / run_id if checkpoints and not rt.dry_run else None
    computed = []
    planned = None
    if trainings.open_folder() is not None and not rt.dry_run:  # the plan's estimate, beside the measured time
        from ..model import RoMAEForPreTraining
        from . import plan

        stage = "pretrain" if issubclass(model_cls, RoMAEForPreTraining) else "finetune"
        planned = plan.training_seconds(stage, model_cfg, cfg, data)

    travelled: dict = {}

    def compute():
        computed.append(True)
        torch.manual_seed(seed)  # model initialisation
        model = model_cls(model_cfg)
        if pretrained is not None:
            model.load_encoder(pretrained() if callable(pretrained) else pretrained)
        if out_dir is not None and not refresh:  # a piece before this one, on another machine: its checkpoint
            travelled.update(travel.arrive(run_id, out_dir) or {})
        started = max(travel.local_step(out_dir), 0) if out_dir is not None else 0
        t0 = time.perf_counter()
        with terminal.named(name, planned):
            res = fit(model, data_, cfg, out_dir=out_dir, config=model_cfg, resume=not refresh,
                      on_progress=terminal.Progress(), **fit_kwargs)
        if res.paused is not None:  # stopped cleanly: nothing is kept but its checkpoint, which travels
            where = travel.leave(run_id, out_dir, name=name, code=code, started=started, why=res.paused,
                                 wall_seconds=time.perf_counter() - t0, planned_seconds=planned, before=travelled)
            raise travel.TrainingPaused(name, run_id, res.steps, travel.local_step(out_dir, "total_steps"),
                                        res.paused, planned, where)
        if travelled:  # its last piece, beside those before it
            travelled["pieces"] = [*travelled.get("pieces", []),
                                   travel.piece(started, res.steps, time.perf_counter() - t0, "finished")]
        return dict(state_dict={k: v.detach().cpu() for k, v in res.model.state_dict().items()},
                    history=res.history, steps=res.steps, seconds=seconds_of(res.history, time.perf_counter() - t0))

    result = kept(name, key, compute, cache_dir=cache_dir, refresh=refresh, roots=made_of["roots"],
                  require=("state_dict",) if need_weights else (), planned=planned,
                  more=lambda: {"pieces": travelled["pieces"]} if travelled.get("pieces") else {})
    if not computed:
        terminal.cached(name, planned)
    elif travelled:
        travel.done(run_id)  # finished and kept: its travelling checkpoint leaves the record
    return {**result, "run_id": run_id}


def _objects(obj) -> list:
    """The package objects among `obj` (through dicts, lists and tuples): callables and datasets handed to fit."""
    if isinstance(obj, dict):
        return [x for v in obj.values() for x in _objects(v)]
    if isinstance(obj, (list, tuple)):
        return [x for v in obj for x in _objects(v)]
    return [] if obj is None or isinstance(obj, (str, bytes, int, float, bool)) else [obj]


# ----------------------------------------------------------------------------- the recipe, kept

def pretrain_finetune_kept(name: str, train, test, model: RoMAEConfig, *, finetune: TrainConfig,
                           pretrain: TrainConfig | None, n_outputs: int, seed: int, key: dict,
                           cache_dir=None, refresh: bool = False, checkpoints: bool = False,
                           profile: str = "", **kw) -> dict:
    """`romae.recipe.pretrain_finetune` (same arguments and result), its two trainings through `fit_cached` and
    its evaluation through `kept` (keyed by the fine-tuned model's run id and a hash of the whole test set), so
    a re-run loads them instead of retraining, and a committed paper run reports without weights.
    profile: "paper": both trainings take the micro-batch `romae.compendium.plan` picks for their data on this
    device's memory (micro_batch is not in a key: it changes memory, not the result)."""
    if profile == "paper":
        from . import plan

        ft_cfg = recipe.prediction_config(model, n_outputs=n_outputs, dropout=kw.get("dropout"),
                                          drop_path=kw.get("drop_path"), dropout_at=kw.get("dropout_at"),
                                          **(kw.get("head_overrides") or {}))
        pre_data = train if kw.get("pretrain_data") is None else kw["pretrain_data"]
        pretrain = pretrain and plan.fit_memory(pretrain, model, plan.tokens_of(pre_data), "pretrain", profile,
                                                padded=plan.is_padded(pre_data))
        finetune = plan.fit_memory(finetune, ft_cfg, plan.tokens_of(train), "finetune", profile,
                                   padded=plan.is_padded(train))
    trainer = partial(fit_cached, cache_dir=cache_dir, refresh=refresh, checkpoints=checkpoints)

    def evaluator(name_: str, key_: dict, compute):
        # its numbers: the fine-tuned model (its run id), the test data (its hash), the evaluation it computes
        return kept(name_, key_, compute, cache_dir=cache_dir, refresh=refresh, roots=[compute, pretrain_finetune_kept])

    return recipe.pretrain_finetune(name, train, test, model, finetune=finetune, pretrain=pretrain,
                                    n_outputs=n_outputs, seed=seed, key=key, trainer=trainer, evaluator=evaluator,
                                    test_key=dict(test=data_fingerprint(test)), **kw)


__all__ = ["fit_cached", "kept", "pretrain_finetune_kept", "seconds_of"]
