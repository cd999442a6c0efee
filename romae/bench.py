"""`python -m romae.bench`: the command-line entry point of `romae.runner.bench` (the runner's floor; `import romae`
never loads it, and nothing imports this file)."""

if __name__ == "__main__":
    import sys

    from romae.runner.bench import main

    sys.exit(main())
