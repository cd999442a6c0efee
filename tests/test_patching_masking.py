"""N-D patchification and vectorised masking."""

import math

import pytest
import torch

from romae.masking import check_mask, gather_positions, gather_tokens, random_mask, split_indices
from romae.patching import grid_positions, patch_positions, patchify, unpatchify


@pytest.mark.parametrize("shape,patch", [((2, 8, 12, 3), (4, 4)), ((2, 6, 3), (2,)),
                                         ((1, 4, 6, 8, 2), (2, 3, 4)), ((3, 50, 24, 24, 1), (1, 24, 24))])
def test_patchify_round_trip(shape, patch):
    x = torch.randn(shape)
    tokens = patchify(x, patch)
    grid = [s // p for s, p in zip(shape[1:-1], patch)]
    assert tokens.shape == (shape[0], math.prod(grid), math.prod(patch) * shape[-1])
    assert torch.equal(unpatchify(tokens, patch, grid), x)


def test_patch_token_layout_matches_authors():
    """Tokens row-major over the patch grid; inside a token (offsets..., channel) with channel fastest."""
    H, W, C = 4, 6, 2
    x = torch.arange(H * W * C).reshape(1, H, W, C).float()
    tokens = patchify(x, (2, 3))  # grid 2 x 2
    # token 1 is grid cell (0, 1): rows 0-1, columns 3-5
    expected = x[0, 0:2, 3:6, :].reshape(-1)
    assert torch.equal(tokens[0, 1], expected)
    assert torch.equal(tokens[0, 1, :2], x[0, 0, 3, :])  # channel fastest


def test_grid_and_patch_positions():
    pos = grid_positions((2, 3))
    assert pos.tolist() == [[0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2]]
    times = torch.tensor([[0.5, 1.7, 9.2], [0.1, 0.2, 0.3]])
    p = patch_positions((2, 3, 4, 1), (1, 2), coords=[times, None])
    assert p.shape == (2, 2, 6)
    assert p[0, 0].tolist() == pytest.approx([0.5, 0.5, 1.7, 1.7, 9.2, 9.2])
    assert p[1, 1].tolist() == [0, 1, 0, 1, 0, 1]


def test_patch_size_errors():
    with pytest.raises(ValueError, match="does not divide axis 1 of length 12"):
        patchify(torch.randn(1, 8, 12, 3), (4, 5))
    with pytest.raises(ValueError, match="Proposition 4.1"):
        patchify(torch.randn(1, 8, 12, 3), (2, 4), irregular_axes=(0,))
    with pytest.raises(ValueError, match="Proposition 4.1"):
        patch_positions((1, 8, 12, 3), (2, 4), coords=[torch.rand(8), None])
    with pytest.raises(ValueError, match="axes"):
        patchify(torch.randn(1, 8, 3), (2, 2))


def test_random_mask_equal_counts_without_padding():
    mask = random_mask(16, 196, 0.75)
    assert mask.shape == (16, 196) and mask.dtype == torch.bool
    assert (mask.sum(1) == 147).all()
    assert not torch.equal(mask[0], mask[1])  # per-sample randomness


def test_random_mask_with_padding():
    torch.manual_seed(0)
    B, N = 64, 40
    n_real = torch.randint(1, N + 1, (B,))
    pad = torch.arange(N) >= n_real[:, None]
    mask = random_mask(B, N, 0.5, pad)
    K = math.ceil(N * 0.5)
    assert (mask.sum(1) == K).all()  # equal counts in the batch
    hidden_real = (mask & ~pad).sum(1)
    expect = torch.minimum(torch.ceil(n_real * 0.5).long(), n_real - 1)
    assert torch.equal(hidden_real, expect)  # ceil(n * ratio) of the real tokens, one stays visible
    assert ((~mask & ~pad).sum(1) >= 1).all()


def test_mask_errors():
    with pytest.raises(ValueError, match="mask_ratio"):
        random_mask(2, 10, 1.0)
    pad = torch.zeros(2, 5, dtype=torch.bool)
    pad[1] = True
    with pytest.raises(ValueError, match="sample 1 of the batch is all padding"):
        random_mask(2, 5, 0.5, pad)
    bad = torch.zeros(2, 5, dtype=torch.bool)
    bad[0, :2] = True
    bad[1, :3] = True
    with pytest.raises(ValueError, match="same number of tokens"):
        check_mask(bad, 2, 5)


def test_split_and_gather_keep_order():
    mask = torch.tensor([[True, False, True, False, False], [False, False, True, True, False]])
    vis, hid = split_indices(mask)
    assert vis.tolist() == [[1, 3, 4], [0, 1, 4]]
    assert hid.tolist() == [[0, 2], [2, 3]]
    x = torch.arange(10).reshape(2, 5, 1)
    assert gather_tokens(x, hid)[..., 0].tolist() == [[0, 2], [7, 8]]
    pos = torch.arange(20).reshape(2, 2, 5)
    assert gather_positions(pos, vis)[1].tolist() == [[10, 11, 14], [15, 16, 19]]
