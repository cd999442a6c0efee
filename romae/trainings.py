"""`python -m romae.trainings`: the command-line entry point of `romae.compendium.trainings` (the committed record of
kept trainings; `import romae` never loads it, and nothing imports this file)."""

if __name__ == "__main__":
    import sys

    from romae.compendium.trainings import main

    sys.exit(main())
