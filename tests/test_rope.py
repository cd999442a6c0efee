"""Continuous axial p-RoPE against a slow reference and against the paper's identities."""

import math

import pytest
import torch

from romae.rope import RoPE, apply_rope, interleave_permutation, rope_frequencies, rotate_qk_, sincos_1d, sincos_nd

# float32 trig of angles up to ~1e3 rad: cos/sin lose ~1e-4 relative accuracy at worst; products of
# unit-scale vectors then agree to a few 1e-5 between the fast and the per-pair float64 reference.
TRIG_ATOL = 5e-5


def rope_reference(x, positions, n_axes, p=0.75, base=10000.0):
    """Slow, obviously correct RoPE: loop over tokens, axes and rotation pairs (float64)."""
    B, H, N, hd = x.shape
    a = hd // n_axes
    kept = math.floor(p * a / 2)
    out = x.double().clone()
    for b in range(B):
        for n in range(N):
            for i in range(n_axes):
                m = float(positions[b, i, n])
                for k in range(a // 2):
                    theta = base ** (-2 * k / a) if k < kept else 0.0
                    j1, j2 = i * a + k, i * a + k + a // 2  # rotate-half pairing inside chunk i
                    x1, x2 = x[b, :, n, j1].double(), x[b, :, n, j2].double()
                    c, s = math.cos(m * theta), math.sin(m * theta)
                    out[b, :, n, j1] = x1 * c - x2 * s
                    out[b, :, n, j2] = x2 * c + x1 * s
    return out


@pytest.mark.parametrize("hd,n_axes", [(60, 1), (60, 2), (60, 3), (72, 2), (30, 1)])
def test_rope_matches_slow_reference(hd, n_axes):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 7, hd)
    positions = torch.rand(2, n_axes, 7) * 100 - 20  # real-valued, negative ones too
    rope = RoPE(hd, n_axes)
    fast = apply_rope(x, rope.angles(positions))
    torch.testing.assert_close(fast.double(), rope_reference(x, positions, n_axes), atol=TRIG_ATOL, rtol=0)


def test_frequencies_keep_highest_and_count_pairs():
    # chunk of 60: 30 pairs, floor(0.75 * 30) = 22 rotated (authors-code.md table)
    theta = rope_frequencies(60, p=0.75)
    assert theta.shape == (30,)
    assert (theta[:22] > 0).all() and (theta[22:] == 0).all()
    assert theta[0] == 1.0 and torch.all(theta[1:22] < theta[:21])  # highest frequencies kept
    torch.testing.assert_close(theta[21], torch.tensor(10000 ** (-2 * 21 / 60)))
    assert int((rope_frequencies(36) > 0).sum()) == 13  # small, 2 axes
    assert int((rope_frequencies(320) > 0).sum()) == 120  # App. B.1


@pytest.mark.parametrize("n_axes", [1, 2, 3])
def test_relative_property_real_positions(n_axes):
    """<R(m) q, R(n) k> = <R(m - n) q, k> for real-valued m, n on every axis."""
    torch.manual_seed(1)
    hd = 60
    rope = RoPE(hd, n_axes)
    q, k = torch.randn(1, 1, 1, hd, dtype=torch.float64), torch.randn(1, 1, 1, hd, dtype=torch.float64)
    m = torch.rand(1, n_axes, 1) * 50
    n = torch.rand(1, n_axes, 1) * 50
    rq = apply_rope(q, rope.angles(m)).double()
    rk = apply_rope(k, rope.angles(n)).double()
    rel = apply_rope(q, rope.angles(m - n)).double()
    lhs, rhs = (rq * rk).sum(), (rel * k).sum()
    assert abs(float(lhs - rhs)) < 1e-4
    # and the score really depends on position (not a trivially invariant construction)
    other = apply_rope(q, rope.angles(m + 0.7)).double()
    assert abs(float((other * rk).sum() - lhs)) > 1e-3


def test_p_rope_leaves_unrotated_channels_bit_exact():
    hd, n_axes = 60, 2  # chunks of 30: 15 pairs, 11 rotated, pairs 11..14 identity
    rope = RoPE(hd, n_axes, p=0.75)
    x = torch.randn(2, 3, 5, hd)
    out = apply_rope(x, rope.angles(torch.rand(2, n_axes, 5) * 1000))
    a, half = 30, 15
    for i in range(n_axes):
        for k in range(11, 15):
            for j in (i * a + k, i * a + k + half):
                assert torch.equal(out[..., j], x[..., j])
        assert not torch.equal(out[..., i * a], x[..., i * a])  # a rotated channel does change


def test_axial_chunks_rotate_only_with_their_own_axis():
    hd, n_axes = 60, 3
    rope = RoPE(hd, n_axes)
    x = torch.randn(1, 2, 4, hd)
    pos = torch.rand(1, n_axes, 4) * 10
    base = apply_rope(x, rope.angles(pos))
    for axis in range(n_axes):
        moved = pos.clone()
        moved[:, axis] += 3.3
        out = apply_rope(x, rope.angles(moved))
        for i in range(n_axes):
            chunk = slice(i * 20, (i + 1) * 20)
            same = torch.equal(out[..., chunk], base[..., chunk])
            assert same == (i != axis), f"axis {axis} moved, chunk {i} same={same}"


def test_per_token_positions_not_scrambled():
    """Each token is rotated by its own coordinates (the pre-June-2025 authors' bug mixed tokens)."""
    hd, n_axes = 60, 2
    rope = RoPE(hd, n_axes)
    x = torch.randn(1, 1, 5, hd)
    pos = torch.rand(1, n_axes, 5) * 10
    full = apply_rope(x, rope.angles(pos))
    for t in range(5):
        alone = apply_rope(x[:, :, t:t + 1], rope.angles(pos[:, :, t:t + 1]))
        torch.testing.assert_close(full[:, :, t:t + 1], alone)


def test_quantized_rounds_positions():
    rope_q = RoPE(60, 1, quantize=True)
    assert torch.equal(rope_q.angles(torch.tensor([[[2.2, 7.8]]])), rope_q.angles(torch.tensor([[[2.0, 8.0]]])))


def test_bf16_inputs_keep_dtype_and_use_float32_angles():
    rope = RoPE(60, 1)
    rot = rope.angles(torch.rand(1, 1, 4) * 100)
    assert rot.dtype == torch.complex64
    x = torch.randn(1, 1, 4, 60).bfloat16()
    assert apply_rope(x, rot).dtype == torch.bfloat16


def test_sincos_tables():
    t = sincos_1d(torch.arange(5), 8)
    assert t.shape == (5, 8)
    torch.testing.assert_close(t[0], torch.tensor([0.0, 1.0] * 4))
    torch.testing.assert_close(t[3, 0], torch.tensor(math.sin(3.0)))
    nd = sincos_nd(torch.rand(2, 3, 4), 12)
    assert nd.shape == (2, 4, 12)
    with pytest.raises(ValueError, match="divisible by 2 \\* n_axes"):
        sincos_nd(torch.rand(2, 3, 4), 16)


@pytest.mark.parametrize("hd,n_axes,match", [(60, 7, "equal chunks"), (60, 4, "equal chunks"),
                                             (30, 2, "even size")])
def test_bad_head_dim_raises(hd, n_axes, match):
    with pytest.raises(ValueError, match=match) as e:
        RoPE(hd, n_axes)
    assert str(hd) in str(e.value)


@pytest.mark.parametrize("shape", [(2, 3), (2, 1, 5), (2, 3, 5, 1)])
def test_bad_position_shape_raises(shape):
    rope = RoPE(60, 2)
    with pytest.raises(ValueError, match="positions must have shape"):
        rope.angles(torch.zeros(shape))


def test_model_rotation_equals_rotate_half_reference_forward_and_backward():
    """The model's in-place complex rotation of the pair-interleaved fused q/k projection gives the
    same q.k scores, and the same gradients, as rotate-half RoPE with the rows permuted back."""
    torch.manual_seed(4)
    B, N, H, hd, A = 2, 7, 3, 60, 2
    rope = RoPE(hd, A)
    rot = rope.angles(torch.rand(B, A, N) * 30)
    perm = interleave_permutation(hd, A)
    x = torch.randn(B, N, 2 * H * hd, dtype=torch.float32)

    leaf1 = x.clone().requires_grad_()
    q1, k1 = rotate_qk_(leaf1 * 1.0, rot, H).view(B, N, 2, H, hd).permute(2, 0, 3, 1, 4)  # * 1.0: fresh
    scores1 = q1 @ k1.transpose(-1, -2)

    leaf2 = x.clone().requires_grad_()
    inv = torch.argsort(perm)  # interleaved -> rotate-half
    q2, k2 = leaf2.view(B, N, 2, H, hd)[..., inv].permute(2, 0, 3, 1, 4)
    scores2 = apply_rope(q2, rot) @ apply_rope(k2, rot).transpose(-1, -2)
    torch.testing.assert_close(scores1, scores2, atol=1e-4, rtol=1e-5)

    w = torch.randn_like(scores1)
    (scores1 * w).sum().backward()
    (scores2 * w).sum().backward()
    torch.testing.assert_close(leaf1.grad, leaf2.grad, atol=1e-4, rtol=1e-5)


def test_interleave_permutation_pairs():
    perm = interleave_permutation(12, 2)  # chunks of 6, halves of 3
    assert perm.tolist() == [0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11]


def test_model_rotation_bf16_matches_float32():
    rope = RoPE(60, 1)
    rot = rope.angles(torch.rand(2, 1, 5) * 50)
    x = torch.randn(2, 5, 2 * 2 * 60)
    ref = rotate_qk_(x.clone(), rot, 2)
    low = rotate_qk_(x.clone().bfloat16(), rot, 2)
    assert low.dtype == torch.bfloat16
    torch.testing.assert_close(low.float(), ref, atol=0.05, rtol=0.02)


# ------------------------------------------------------ large positions: float64 angles, mod 2 pi
# Unix-second timestamps are ~1.7e9: float32 spacing there is 128, and a float32 angle of 1.7e9 rad
# (theta_0 = 1) has no digits below 2 pi. RoPE forms position * theta and reduces it mod 2 pi in float64.

T0 = 1.7e9  # exactly representable in float64 (and, as it happens, in float32: 1.7e9 = 128 * 13281250)
T1 = 3.3e8  # second axis: a different large origin


def _qk_scores_both_paths(positions, hd, n_axes, H=2, seed=7):
    """q.k scores [2 (rotate-half | fused interleaved), B, H, N, N] at positions [B, A, N] (float64 ok),
    and the norm products |q_i| |k_j| [B, H, N, N] for the tolerance."""
    torch.manual_seed(seed)
    B, _, N = positions.shape
    rope = RoPE(hd, n_axes)
    rot = rope.angles(positions)
    qk = torch.randn(B, N, 2 * H * hd)  # fused projection output, rotate-half layout per head
    q, k = qk.view(B, N, 2, H, hd).permute(2, 0, 3, 1, 4)  # [B, H, N, hd] each
    s_half = apply_rope(q, rot) @ apply_rope(k, rot).transpose(-1, -2)
    perm = interleave_permutation(hd, n_axes)  # the model's layout: pairs in neighbouring channels
    fused = qk.view(B, N, 2, H, hd)[..., perm].reshape(B, N, -1).contiguous()
    qf, kf = rotate_qk_(fused, rot, H).view(B, N, 2, H, hd).permute(2, 0, 3, 1, 4)
    s_fused = qf @ kf.transpose(-1, -2)
    norms = q.norm(dim=-1)[..., :, None] * k.norm(dim=-1)[..., None, :]
    return torch.stack((s_half, s_fused)), norms


@pytest.mark.parametrize("n_axes", [1, 2])
def test_relative_property_at_unix_timestamps_float64(n_axes):
    """q(m).k(n) at float64 positions ~1.7e9 equals q(m - T).k(n - T) (the same pair shifted to near
    zero), in the plain rotate-half path and in the model's fused in-place path."""
    hd = 60
    offsets = torch.tensor([0.25, 17.5, -3.75, 59.125, 0.5], dtype=torch.float64)  # seconds; fractions
    small = torch.stack([offsets * (i + 1) for i in range(n_axes)])[None]  # [1, A, 5]
    origin = torch.tensor([T0, T1][:n_axes], dtype=torch.float64)[None, :, None]
    big = small + origin  # exact in float64: fractional parts are multiples of 2^-3
    assert torch.equal(big - origin, small)
    s_big, norms = _qk_scores_both_paths(big, hd, n_axes)
    s_small, _ = _qk_scores_both_paths(small, hd, n_axes)
    assert ((s_big - s_small).abs() / norms).max() < 1e-4
    # the shifted scores really depend on the offsets (the check above is not vacuous)
    s_flat, _ = _qk_scores_both_paths(torch.zeros_like(small), hd, n_axes)
    assert ((s_small - s_flat).abs() / norms).max() > 0.1


def test_positions_thirty_seconds_apart_get_different_phasors():
    rope = RoPE(60, 1)
    pos = torch.tensor([[[T0, T0 + 30.0]]], dtype=torch.float64)
    rot = rope.angles(pos)  # [1, 2, 1, 30]
    fast = rot[0, :, 0, 0]  # fastest pair, theta_0 = 1: angles T0 and T0 + 30 rad
    assert abs(complex(fast[1] / fast[0]) - complex(math.cos(30.0), math.sin(30.0))) < 1e-5
    assert abs(complex(fast[1] - fast[0])) > 1.0  # |exp(30i) - 1| = 2 |sin 15| = 1.30
    # the absolute phasor is right too: T0 mod 2 pi (T0 is an integer, so this is exact in float64)
    assert abs(complex(fast[0]) - complex(math.cos(T0), math.sin(T0))) < 1e-6
    # NoPE pairs stay exactly identity at large positions, and positions get no gradient
    assert torch.equal(rot[..., rope.n_rotated:], torch.ones_like(rot[..., rope.n_rotated:]))
    assert not rope.angles(pos.clone().requires_grad_()).requires_grad


def test_angles_reduced_mod_2pi_in_float64():
    """The phasors are exp(i (pos * theta mod 2 pi)) with the product and the remainder in float64,
    for float64 positions up to 2e9 (and negative ones), float32 and integer positions."""
    torch.manual_seed(11)
    hd, n_axes = 60, 2
    rope = RoPE(hd, n_axes)
    a = hd // n_axes
    theta64 = 10000.0 ** (-2.0 * torch.arange(a // 2, dtype=torch.float64) / a)
    theta64[rope.n_rotated:] = 0.0  # NoPE pairs
    pos = torch.cat([(torch.rand(3, n_axes, 6, dtype=torch.float64) * 4 - 2) * 10.0 ** e
                     for e in (0, 3, 6, 8, 9)], dim=-1)  # [3, 2, 30], |pos| up to 2e9
    for p in (pos, pos.float(), pos.round().long()):
        rot = rope.angles(p)
        assert rot.dtype == torch.complex64 and rot.shape == (3, 30, n_axes, a // 2)
        ang = torch.remainder(p.double().transpose(1, 2).unsqueeze(-1) * theta64, 2 * math.pi)
        assert ang.min() >= 0 and ang.max() < 2 * math.pi
        ref = torch.polar(torch.ones_like(ang), ang)  # complex128
        torch.testing.assert_close(rot.to(torch.complex128), ref, atol=1e-6, rtol=0)


def test_angles_match_high_precision_reference_at_large_positions():
    """Independent check with exact arithmetic (mpmath): pos * base^(-2k/a) mod 2 pi, for float64 pos."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    a, base = 60, 10000.0
    rope = RoPE(a, 1, base=base)
    pos = torch.tensor([[[T0 + 0.3, 2.0e9 - 1.0 / 3, -1.2345678e9, 8.4e6 + 0.5, 1e7 + 0.1]]],
                       dtype=torch.float64)
    rot = rope.angles(pos)[0, :, 0]  # [5, 30]
    worst = 0.0
    for n in range(pos.shape[-1]):
        m = mpmath.mpf(float(pos[0, 0, n]))  # the float64 value exactly
        for k in range(rope.n_rotated):
            angle = m * mpmath.power(base, mpmath.mpf(-2 * k) / a)
            want = complex(mpmath.cos(angle), mpmath.sin(angle))
            worst = max(worst, abs(complex(rot[n, k]) - want))
    assert worst < 1e-6


def test_quantized_rounds_large_float64_positions():
    rope_q = RoPE(60, 1, quantize=True)
    pos = torch.tensor([[[T0 + 0.4, T0 + 1.0, T0 + 2.6]]], dtype=torch.float64)
    rot = rope_q.angles(pos)
    exact = rope_q.angles(torch.tensor([[[T0, T0 + 1.0, T0 + 3.0]]], dtype=torch.float64))
    assert torch.equal(rot, exact)
    assert abs(complex(rot[0, 1, 0, 0] / rot[0, 0, 0, 0]) - complex(math.cos(1.0), math.sin(1.0))) < 1e-5


def test_float64_frequencies_survive_module_dtype_casts():
    """`module.to(dtype)` casts floating buffers; the float64 frequencies RoPE multiplies by must not be."""
    pos = torch.tensor([[[T0 + 0.25, T0 + 17.5]]], dtype=torch.float64)
    ref = RoPE(60, 1).angles(pos)
    for cast in (lambda m: m.bfloat16(), lambda m: m.half(), lambda m: m.to(torch.float32),
                 lambda m: m.double()):
        rope = cast(RoPE(60, 1))
        assert rope.theta64.dtype == torch.float64
        torch.testing.assert_close(rope.angles(pos), ref, atol=1e-6, rtol=0)
