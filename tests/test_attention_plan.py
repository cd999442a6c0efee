"""The plan knows which attention kernel a GPU will run (issue 31, item 2): with a padding mask flash is out,
and in BF16 RoMAE-tiny's head size 60 rules the memory-efficient kernel out too, so the math kernel
materialises every [B, H, N, N] score matrix; the plan counts that kernel's memory where it will be used."""

from __future__ import annotations

import pytest
import torch

from romae.compendium import plan
from romae.runner import experiments

experiments.load()  # every experiment registers its paper trainings with the plan
from romae.config import RoMAEConfig, TrainConfig, size

# PyTorch's documented constraints on sm80+ (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp):
# flash: FP16/BF16, no attention mask, head <= 256; memory-efficient: masks allowed, head a multiple of
# 8 (FP16/BF16) or 4 (FP32), by its GEMM alignment; else math.
CASES = [
    (60, "bf16", True, "math"),  # RoMAE-tiny, padded, BF16: the case the issue found
    (60, "bf16", False, "flash"),
    (60, "fp32", True, "efficient"),
    (60, "tf32", True, "efficient"),
    (30, "fp32", True, "math"),  # Table 14's pendulum size (60 / 2)
    (30, "fp32", False, "math"),  # FP32 never takes flash
    (72, "bf16", True, "efficient"),  # RoMAE-small (432 / 6)
    (64, "bf16", True, "efficient"),
    (64, "bf16", False, "flash"),
    (512, "bf16", False, "efficient"),  # too wide for flash
]


@pytest.mark.parametrize("head, precision, masked, kernel", CASES)
def test_the_kernel_rule_follows_pytorch_documented_constraints(head, precision, masked, kernel):
    assert plan.attention_kernel(head, precision, masked) == kernel
    assert plan.attention_kernel(head, precision, masked, device="cpu") == "cpu"


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (8, 0),
                    reason="compares with torch.backends.cuda.can_use_* on an sm80+ GPU")
@pytest.mark.parametrize("head, precision, masked, kernel", CASES)
def test_the_kernel_rule_matches_torch_on_this_gpu(head, precision, masked, kernel):
    from torch.backends.cuda import SDPAParams, can_use_efficient_attention, can_use_flash_attention

    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    q = torch.randn(2, 3, 16, head, device="cuda", dtype=dtype, requires_grad=True)
    mask = torch.ones(2, 1, 1, 16, dtype=torch.bool, device="cuda") if masked else None
    params = SDPAParams(q, q, q, mask, 0.0, False, False)
    torch_kernel = ("flash" if can_use_flash_attention(params, False) else
                    "efficient" if can_use_efficient_attention(params, False) else "math")
    assert torch_kernel == kernel


def _training(padded: bool, precision_bf16: bool = True) -> plan.Training:
    model = RoMAEConfig(token_dim=4, encoder=size("tiny", depth=2), decoder=size("tiny-shallow"))
    return plan.Training("t", "pretrain", model, TrainConfig(batch_size=64, bf16=precision_bf16), 256, samples=1000,
                         padded=padded)


def test_the_plan_counts_the_math_kernel_where_it_will_be_used():
    t = _training(padded=True)
    assert plan.training_kernel(t, "bf16", pad_heads=False) == "math" and plan.training_kernel(t, "fp32") == "efficient"
    assert plan.training_kernel(t, "bf16") == "efficient"  # head size 60 padded to 64 on a GPU (romae.model.attend)
    fused, math = plan.memory(t, bf16=True), plan.memory(t, bf16=True, kernel="math")
    # the math kernel saves [B, H, N, N] probabilities per layer: at 257 tokens, far more per sample
    per_layer_scores = 3 * 257 * 257 * 4  # H x N x N in FP32 (BF16 inputs are upcast)
    assert math.b - fused.b > 2 * per_layer_scores  # encoder + decoder layers
    # and the micro-batch picked follows: on a GPU where the fused count just fits the whole batch, math does not
    budget = fused.peak_gib(4096) + 0.01
    assert plan.pick_micro_batch(4096, fused, budget)[0] == 4096 > plan.pick_micro_batch(4096, math, budget)[0]


def test_bench_plan_states_each_trainings_kernel():
    p = plan.plan(device="h100", memory_gib=80, precisions=("fp32", "bf16"), only=["14"], checked=False)
    # head size 30, padded to 32 on a GPU: the memory-efficient kernel takes the padded FP32 batches
    assert {r["precision"]["fp32"]["kernel"] for r in p["rows"]} == {"efficient"}
    assert "attention (bf16)" in plan.table(p) and "efficient" in plan.table(p)
    assert plan.training_kernel(plan.paper_trainings("14")[0], "fp32", pad_heads=False) == "math"
