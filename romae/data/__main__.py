"""`python -m romae.data status | fetch [NAMES...] [--root DIR]`: what is under the data root, and downloads.

`make data NAMES=a,b` runs `fetch a,b`; `make data` fetches every public data set the notebooks use.
"""

from __future__ import annotations

import argparse
import sys

from . import catalog, files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m romae.data", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("status", "fetch"))
    parser.add_argument("names", nargs="*", help="data set names, e.g. physionet2012 uea:JapaneseVowels esc50 "
                        "(comma-separated also works); none = all the notebooks use")
    parser.add_argument("--root", default=None, help="data root (default: $ROMAE_DATA, else <repo>/data)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--mirror", default=None, help="fetch from a mirror of the official files: <mirror>/<host>/<path> "
                        "(a URL, file:// included); checksums are checked as usual")
    args = parser.parse_args(argv)
    try:
        names = catalog.expand(",".join(args.names))
    except ValueError as e:
        parser.error(str(e))
    root = files.data_root(args.root)
    if args.command == "status":
        print(f"data root: {files.describe_root(args.root)}")
        for row in catalog.status([d.name for d in names], root):
            mark = "here   " if row["here"] else ("missing" if row["fetchable"] else "absent ")
            print(f"  {mark} {row['name']:<28} {row['size']:>10}  {row['folder']}")
        return 0
    total = ", ".join(f"{d.name} ({d.size})" for d in names if not d.present(root))
    print(f"== fetching into {root}: {total or 'nothing (all here)'}", flush=True)
    try:
        with files.mirror(args.mirror):
            catalog.fetch([d.name for d in names], root, progress=not args.no_progress)
    except RuntimeError as e:
        print(f"== {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
