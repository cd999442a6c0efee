"""`python -m romae.promise`: the command-line entry point of `romae.runner.promise` (the runner's floor; `import romae`
never loads it, and nothing imports this file)."""

if __name__ == "__main__":
    import sys

    from romae.runner.promise import main

    sys.exit(main())
