"""`python -m romae.numerics`: the numerics workloads' ids (`romae.compendium.workloads`); nothing imports this."""

if __name__ == "__main__":
    import sys

    from romae.compendium.workloads import main

    sys.exit(main())
