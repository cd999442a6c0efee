"""The shared protocol: the initialisations compared, the control and the trainings it plans."""

from __future__ import annotations

import dataclasses

from ...compendium import plan
from .. import frequency, interpolation


EXPERIMENT = "init_ablation_mask_token"


INITS = ("zeros", "normal")


SOURCES = ("table7_interpolation", "fig3_frequency_retention")  # the experiments whose numbers are compared


CURVE_STEPS = {"smoke": 4, "quick": 60, "paper": 200}  # per-step logged first steps (the figure)


CHECK_SEED = 0  # quick: the Synthetic seed trained fresh with zeros, to check against the committed run


CONTROL = ", raw t (control)"  # the suffix of the raw-t control's settings in fig3_frequency_retention


TOLERANCE = 1e-6  # "reproduces": |fresh - committed| <= TOLERANCE


NOT_COMPARED = "not compared"  # the `better` of a row that is no error (a slope, a reference level)


# ----------------------------------------------------------------------------- the settings

def interpolation_profile(profile: str, init: str) -> interpolation.InterpolationProfile:
    """Notebook 15's profile with `init` for both benchmarks, nothing else changed."""
    prof = interpolation.config(profile)
    return dataclasses.replace(prof, spiral=dataclasses.replace(prof.spiral, mask_token_init=init),
                               synthetic=dataclasses.replace(prof.synthetic, mask_token_init=init))


def control_config(profile: str, init: str) -> frequency.FrequencyConfig:
    """Notebook 02's raw-t control (the profile's config at position_scale 1) with `init`."""
    return dataclasses.replace(frequency.control_config(frequency.config(profile)), mask_token_init=init)


def paper_trainings() -> list[plan.Training]:
    """Notebook 04's paper trainings (`romae.compendium.plan`): the three pieces with MAE's N(0, 0.02) [MASK]. Their zeros
    runs are notebooks 15's and 02's own paper runs (same cache key: trained once, counted there)."""
    c = control_config("paper", "normal")
    return interpolation.paper_trainings(interpolation_profile("paper", "normal"), ", normal [MASK]",
                                         contiformer=False) + [
        dataclasses.replace(t, name="raw-t control, normal [MASK]", model=c.model_config(), train=c.train_config())
        for t in frequency.paper_trainings()]
