"""`python -m romae.gpucheck`: the command-line entry point of `romae.runner.gpucheck` (the runner's floor; `import romae`
never loads it, and nothing imports this file)."""

if __name__ == "__main__":
    import sys

    from romae.runner.gpucheck import main

    sys.exit(main())
