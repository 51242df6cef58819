"""The privacy-utility trade-off of a synthetic-data sweep, ε on the horizontal: the attack's
success with its 95% interval beside the baseline (black and white box), and the utility
(mean Jensen-Shannon distance, TSTR AUC on a second axis, mean ± sd over releases) below.

    python bench/synthetic_tradeoff.py bench/results/synthetic_adult_grid.jsonl \\
        --out docs/synthetic_adult_tradeoff.png

One PNG per (dataset, n) of the points; with several, the name gets _<dataset>_<n>.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from treeleaks.synthetic.plot import tradeoff_png


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("points", type=Path, help="a synthetic sweep's points.jsonl")
    parser.add_argument("--out", type=Path, required=True, help="PNG to write")
    args = parser.parse_args(argv)
    points = [json.loads(line) for line in args.points.read_text().splitlines() if line]
    points = [p for p in points if p.get("attack") == "synthetic" and "success_rate" in p]
    groups = sorted({(p["dataset"], p["n"]) for p in points})
    if not groups:
        parser.error(f"{args.points} holds no finished synthetic points")
    for dataset, n in groups:
        part = [p for p in points if (p["dataset"], p["n"]) == (dataset, n)]
        out = args.out if len(groups) == 1 else args.out.with_name(
            f"{args.out.stem}_{dataset}_{n}{args.out.suffix}")
        releases = part[0].get("utility_releases", 1)
        out.write_bytes(tradeoff_png(part, f"{dataset}, PrivBayes, |X| = {n}, |D| = {5 * n}; "
                                           f"utility over {releases} release(s)"))
        print(f"wrote {out} ({len(part)} points)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
