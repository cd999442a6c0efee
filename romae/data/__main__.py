"""`python -m romae.data status | fetch [NAMES...] [--root DIR]`: what is under the data root, and downloads.

`make data NAMES=a,b` runs `fetch a,b`; `make data` fetches every public data set the notebooks use.
`status` alone lists those data sets (here, missing, or absent: not downloadable), then everything else found
under the data root (`catalog.found`): other catalog entries that are here, every folder uea/<Name>/ holding
.ts files (a UEA data set of one's own too, with whether a checksum is known for it), and folders the catalog
does not know. `status NAMES...` lists those names only.
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
        rows = catalog.status([d.name for d in names], root)
        _print_rows(rows)
        extra = [] if args.names else catalog.found(root, skip=[r["name"] for r in rows])
        if extra:
            print("also under the data root:")
            _print_rows(extra)
        print("(here: its files are there and match their checksums, where one is known or recorded; missing: `make data NAMES=<name>` "
              "fetches it; absent: not downloadable; unknown: a folder no catalog entry uses)")
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


def _print_rows(rows: list[dict]) -> None:
    for row in rows:
        mark = ("here   " if row["here"] else "unknown" if row["title"] == "unknown folder"
                else "missing" if row["fetchable"] else "absent ")
        note = f"  ({row['note']})" if row.get("note") else ""
        print(f"  {mark} {row['name']:<28} {row['size']:>10}  {row['folder']}{note}")


if __name__ == "__main__":
    sys.exit(main())
