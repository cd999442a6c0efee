"""`python -m romae.trainings`: the command-line entry point of `romae.compendium.trainings` (the committed record of
kept trainings) and `romae.compendium.travel` (those in progress); `import romae` never loads it, and nothing imports
this file."""

if __name__ == "__main__":
    import sys

    from romae.compendium.travel import main

    sys.exit(main())
