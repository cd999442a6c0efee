"""The recipe as the experiments run it: `romae.recipe.pretrain_finetune` with its trainings and its evaluation kept
(`romae.compendium.kept`: the results cache, then the committed record), and with the micro-batches the plan picks
for the paper profile.

    res = pretrain_finetune("uea_BasicMotions", train, test, model_cfg, pretrain=TrainConfig(...),
                            finetune=TrainConfig(...), n_outputs=4, seed=69, key={"data": "..."})
"""

from __future__ import annotations

from functools import partial

from .. import recipe
from ..config import RoMAEConfig, TrainConfig
from ..feeding import data_fingerprint
from ..recipe import DROP_PATH_RULE, plot_learning_curves
from . import kept, plan


def pretrain_finetune(name: str, train, test, model: RoMAEConfig, *, finetune: TrainConfig,
                      pretrain: TrainConfig | None, n_outputs: int, seed: int, key: dict,
                      cache_dir=None, refresh: bool = False, checkpoints: bool = False,
                      profile: str = "", **kw) -> dict:
    """`romae.recipe.pretrain_finetune` (same arguments and result), its two trainings through `kept.fit_cached` and
    its evaluation through `kept.kept` (keyed by the fine-tuned model's run id and a hash of the whole test set), so
    a re-run loads them instead of retraining, and a committed paper run reports without weights.
    profile: "paper": both trainings take the micro-batch `romae.compendium.plan` picks for their data on this
    device's memory (micro_batch is not in a key: it changes memory, not the result)."""
    if profile == "paper":
        ft_cfg = recipe.prediction_config(model, n_outputs=n_outputs, dropout=kw.get("dropout"),
                                          drop_path=kw.get("drop_path"), dropout_at=kw.get("dropout_at"),
                                          **(kw.get("head_overrides") or {}))
        pre_data = train if kw.get("pretrain_data") is None else kw["pretrain_data"]
        pretrain = pretrain and plan.fit_memory(pretrain, model, plan.tokens_of(pre_data), "pretrain", profile,
                                                padded=plan.is_padded(pre_data))
        finetune = plan.fit_memory(finetune, ft_cfg, plan.tokens_of(train), "finetune", profile,
                                   padded=plan.is_padded(train))
    trainer = partial(kept.fit_cached, cache_dir=cache_dir, refresh=refresh, checkpoints=checkpoints)

    def evaluator(name_: str, key_: dict, compute):
        # its numbers: the fine-tuned model (its run id), the test data (its hash), the evaluation it computes
        return kept.kept(name_, key_, compute, cache_dir=cache_dir, refresh=refresh, roots=[compute, pretrain_finetune])

    return recipe.pretrain_finetune(name, train, test, model, finetune=finetune, pretrain=pretrain,
                                    n_outputs=n_outputs, seed=seed, key=key, trainer=trainer, evaluator=evaluator,
                                    test_key=dict(test=data_fingerprint(test)), **kw)


__all__ = ["DROP_PATH_RULE", "plot_learning_curves", "pretrain_finetune"]
