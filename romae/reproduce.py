"""`python -m romae.reproduce`: the command-line entry point of `romae.runner.reproduce` (the runner's floor; `import romae`
never loads it, and nothing imports this file)."""

if __name__ == "__main__":
    import sys

    from romae.runner.reproduce import main

    sys.exit(main())
