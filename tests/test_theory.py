"""The theory notebook's facts: RoPE's relative property, the p-RoPE channel layout, Prop. 4.2's [CLS]
construction (App. C.1) and Corollary 4.1's translation invariance, each against an independent check."""

import json
import math

import numpy as np
import pytest
import torch

from romae.experiments import theory
from romae.compendium.report import ROOT

# float32 scores of unit-scale vectors with angles up to ~50 rad: rounding of the angles costs ~1e-6
# relative; 1e-5 relative leaves a margin of ten.
SCORE_RTOL = 1e-5
SHIFT_ATOL = 1e-5  # a 12-block float32 encoder: identical outputs agree to ~5e-7 (see the notebook)


def rotation_reference(psi, positions, n_axes, p=0.75, base=10000.0):
    """Slow, obviously correct R^m psi in float64: an explicit 2x2 rotation per pair (eq. 4), rotate-half layout."""
    psi = np.asarray(psi, dtype=np.float64)
    hd = psi.size
    a = hd // n_axes
    kept = math.floor(p * a / 2)
    out = psi.copy()
    for i in range(n_axes):
        for k in range(a // 2):
            theta = base ** (-2 * k / a) if k < kept else 0.0
            c1, c2 = i * a + k, i * a + k + a // 2
            phi = positions[i] * theta
            rot = np.array([[math.cos(phi), -math.sin(phi)], [math.sin(phi), math.cos(phi)]])
            out[[c1, c2]] = rot @ psi[[c1, c2]]
    return out


def test_config_same_for_every_profile_and_validates():
    assert theory.config("smoke") == theory.config("quick") == theory.config("paper")
    with pytest.raises(ValueError, match="unknown profile"):
        theory.config("fast")


@pytest.mark.parametrize("n_axes", [1, 2, 3])
def test_relative_property_real_positions(n_axes):
    t = theory.relative_property_table(axes=(n_axes,), n_pairs=6, seed=3)
    scale = t.score.abs().max()
    assert (t.abs_diff < SCORE_RTOL * 10 * max(scale, 1)).all()
    assert (t.diff_after_common_offset < SCORE_RTOL * 10 * max(scale, 1)).all()
    assert (t.diff_after_moving_m > 1e-3).all()  # the score does depend on position


def test_channel_table_counts_head60_one_axis():
    t = theory.channel_frequency_table("tiny", 1)
    assert len(t) == 60
    assert int(t.rotated.sum()) == 44  # 22 of 30 pairs rotate, both channels of each
    assert t.pair[t.rotated].nunique() == 22 and t.pair.nunique() == 30
    assert (t.label[~t.rotated] == "NoPE").all()
    assert t.theta.max() == 1.0 and t.theta[t.rotated].min() == pytest.approx(10000 ** (-42 / 60), rel=1e-6)


@pytest.mark.parametrize("size_name,n_axes", [("tiny", 2), ("small", 1), ("small", 3), ("base", 3)])
def test_channel_table_matches_direct_formula(size_name, n_axes):
    t = theory.channel_frequency_table(size_name, n_axes)
    hd = int(t.head_dim.iloc[0])
    a = hd // n_axes
    for c in range(hd):
        k = c % a % (a // 2)
        expected = 10000 ** (-2 * k / a) if k < math.floor(0.75 * a / 2) else 0.0
        assert t.theta[c] == pytest.approx(expected, rel=1e-6, abs=0)
        assert t.axis[c] == c // a
    assert (t.partner[t.partner].values == t.channel.values).all()  # pairing is an involution ...
    assert (t.theta[t.partner].values == t.theta.values).all()  # ... inside one rotation pair
    assert (t.axis[t.partner].values == t.axis.values).all()  # ... and inside one axis chunk


def test_channel_summary_matches_authors_code_table():
    s = theory.channel_summary()
    # authors-code.md, Sec. 3.4: rotated / identity pairs per axis (tiny and base share head width 60)
    for (hd, A), (rot, nope) in {(60, 1): (22, 8), (60, 2): (11, 4), (60, 3): (7, 3), (72, 2): (13, 5)}.items():
        rows = s[(s.head_dim == hd) & (s.n_axes == A)]
        assert len(rows) >= 1
        assert (rows.rotated_per_axis == rot).all() and (rows.nope_per_axis == nope).all()


def test_prop42_scores_match_explicit_rotation_matrices():
    psi = theory.prop42_psi(60, 1, seed=1)
    r, j = [3.7, -12.25], [0.0, 1.5, 9.99, -40.0]
    got = theory.prop42_scores(r, j, psi).double()
    closed = theory.prop42_closed_form(r, j, psi)
    ref = torch.tensor([[rotation_reference(psi, [jj], 1) @ rotation_reference(psi, [rr], 1) for jj in j] for rr in r])
    # eq. (7) = eq. (5); theta is the model's float32 value, the reference's is exact: ~1e-8 relative
    torch.testing.assert_close(closed, ref, rtol=1e-7, atol=1e-9)
    torch.testing.assert_close(got, ref, rtol=0, atol=SCORE_RTOL * float(psi.pow(2).sum()))


@pytest.mark.parametrize("step", [1.0, 0.25, 0.01])
def test_prop42_argmax_is_nearest_grid_point(step):
    psi = theory.prop42_psi(60, 1, seed=0)
    j = torch.arange(0.0, 40.0 + step / 2, step, dtype=torch.float64)
    r_values = [2.5 + 0.1 * step, 7.3, 13.0 - 0.3 * step, math.pi * 5, 16.77, 33.333]
    scores, table = theory.prop42_summary(r_values, j, psi)
    for r, s in zip(r_values, scores):
        nearest = int((j - r).abs().argmin())
        assert int(s.argmax()) == nearest, (r, float(j[int(s.argmax())]), float(j[nearest]))
    if step == 0.01:  # on a fine grid the peak reaches psi^T psi (the proof's maximum)
        assert np.allclose(table.peak_score, table.psi_norm_sq, rtol=1e-4)
    assert (table.max_abs_diff_eq7 < SCORE_RTOL * table.psi_norm_sq).all()


def test_prop42_two_axes_and_negative_positions():
    psi = theory.prop42_psi(60, 2, seed=2)
    g = torch.arange(-10.0, 10.01, 0.5)
    grid = torch.cartesian_prod(g, g)  # [J, 2]
    r = torch.tensor([[3.3, -7.1], [-0.4, 8.9], [math.e, -math.pi]])
    s = theory.prop42_scores(r, grid, psi, n_axes=2)
    for rr, ss in zip(r, s):
        best = grid[int(ss.argmax())]
        torch.testing.assert_close(best, torch.round(rr * 2) / 2)


def test_prop42_needs_energy_on_several_rotating_pairs():
    j = torch.arange(-50.0, 50.0, 0.05, dtype=torch.float64)
    flat = theory.prop42_closed_form([7.3], j, theory.prop42_psi(60, 1, support="nope"))[0]
    assert float(flat.max() - flat.min()) < 1e-9  # psi != 0, yet the score carries no position
    one = theory.prop42_psi(60, 1, support=0)  # one pair, theta = 1: maxima repeat every 2 pi
    s = theory.prop42_closed_form([7.3, 7.3 + 2 * math.pi], [7.3], one)[:, 0]
    assert float(s[0] - s[1]) < 1e-9
    t = theory.prop42_support_table(span=200.0).set_index("psi_support")
    assert t.loc["all", "best_at_dist_ge_1"] < 0.99 and t.loc["rotated", "best_at_dist_ge_1"] < 0.99
    assert t.loc["nope", "best_at_dist_ge_1"] == pytest.approx(1.0)


@pytest.mark.parametrize("n_axes", [1, 2])
def test_translation_gap_only_with_cls(n_axes):
    shifts = [3.0, 7.25, 100.0]
    without = theory.translation_gap(shifts, use_cls=False, n_axes=n_axes, n_tokens=8, batch=2)
    with_cls = theory.translation_gap(shifts, use_cls=True, n_axes=n_axes, n_tokens=8, batch=2)
    assert (without < SHIFT_ATOL).all(), without
    assert (with_cls > 1e-3).all(), with_cls


def test_notebook_names_its_figures_and_is_stripped():
    nb = json.loads((ROOT / "notebooks" / "00_rope_theory.ipynb").read_text())
    first = "".join(nb["cells"][0]["source"])
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    for fig in ("fig_rope_channels", "fig_prop42_cls_scores", "fig_translation_invariance"):
        assert f"`{fig}`" in first and f'"{fig}"' in code
    params = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1 and 'profile: str = "smoke"' in "".join(params[0]["source"])
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in nb["cells"] if c["cell_type"] == "code")


def test_prose_sentences_come_from_the_tables():
    """The notebook's statements about the tables are computed from them (no hand-typed result)."""
    import pandas as pd

    from romae.experiments import theory

    rel = theory.relative_property_table(axes=(1,), n_pairs=3)
    text = theory.relative_property_text(rel)
    assert f"{rel.abs_diff.max():.1e}" in text and f"{rel.diff_after_moving_m.max():.2g}" in text
    table = pd.DataFrame([dict(n_axes=1, cls=c, shift=s, max_abs_diff=(1e-3 * s if c == "with [CLS]" else 5e-7))
                          for c in ("no [CLS]", "with [CLS]") for s in (0.1, 10.0, 100.0)])
    text = theory.translation_text(table)
    assert "at most 5.0e-07" in text and "1.0e-04-1.0e-04 at c = 0.1" in text and "1.0e-02-1.0e-01 for c >= 10" in text
