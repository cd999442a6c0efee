"""`python -m romae.experiments.esc50` (or `accelerate launch -m romae.experiments.esc50`)."""

from .experiment import main


if __name__ == "__main__":
    main()
