"""Benchmark: singling out from PrivBayes synthetic data (Sedlmeyr 2024, part 1), black box,
on a binarized dataset with its one-hot groups turned back into categorical attributes.

For each ε: a population D of 5·n distinct rows (|X|/|D| = 0.2, as in the study), the
attack trained on shadow pairs drawn from D, then attacked on releases of fresh private
samples X of n rows; the success rate with its 95% Wilson interval beside the baseline 0.2.
Also the PrivBayes fit-and-sample time on 1,000 rows of the dataset, and the utility over
several releases (Jensen-Shannon distances, AUC trained on them and tested on the other rows
of D), mean ± sd; the trade-off is drawn beside the JSON (same name, .png).

    python bench/synthetic.py --smoke     # < 10 s
    python bench/synthetic.py             # Adult, n = 100, ε ∈ {0.1, 1000}: 40 s
    python bench/synthetic.py --anonymeter-python /work/venv-anon/bin/python

With ``--anonymeter-python`` (an environment with anonymeter, which pins numpy < 1.27),
anonymeter's singling-out evaluator also scores the release the utility is measured on.

A scaled-down protocol: the study used 50 targets, 1,000 shadow pairs (10 releases each)
and 1,000 attacked releases per point. See docs/synthetic.md.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from common import BENCH_DIR, DEFAULT_DATA_DIR, environment, write_json

from treeleaks.sweep.datasets import load_dataset
from treeleaks.synthetic import anonymeter_check
from treeleaks.synthetic.encoding import Encoding
from treeleaks.synthetic.plot import tradeoff_png
from treeleaks.synthetic.privbayes import PrivBayes
from treeleaks.synthetic.singling_out import AttackSizes, single_out_synthetic
from treeleaks.synthetic.utility import release_utility

FULL = {"n": 100, "epsilons": "0.1,1000", "targets": 10, "shadows": 50, "attacks": 200,
        "releases": 5}
SMOKE = {"n": 50, "epsilons": "1000", "targets": 3, "shadows": 5, "attacks": 20, "releases": 2}


def fit_seconds(table: pd.DataFrame, repeats: int = 10) -> float:
    """Mean seconds to fit PrivBayes (ε = 1, k = 2) on 1,000 rows and sample as many."""
    encoding = Encoding.fit(table)
    codes = encoding.codes(table, "table")[:1000]
    start = time.perf_counter()
    for seed in range(repeats):
        PrivBayes(1.0, random_state=seed).fit(codes, encoding.sizes).sample(len(codes))
    return (time.perf_counter() - start) / repeats


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes")
    parser.add_argument("--dataset", default="adult")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--white-box", action="store_true", help="attack the fitted models")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--anonymeter-python", type=Path, default=None,
                        help="python of an environment with anonymeter")
    args = parser.parse_args(argv)
    sizes = SMOKE if args.smoke else FULL
    data = load_dataset(args.dataset, args.data_dir)
    table = data.categorical().drop_duplicates()
    rng = np.random.default_rng(args.seed)
    population = table.iloc[rng.choice(len(table), 5 * sizes["n"], replace=False)]
    seconds = fit_seconds(table.sample(frac=1.0, random_state=args.seed))
    print(f"{args.dataset}: {table.shape[1]} attributes, {len(table):,} distinct rows; "
          f"PrivBayes fit + sample of 1,000 rows: {seconds:.3f} s")
    points = []
    for epsilon in map(float, sizes["epsilons"].split(",")):
        result = single_out_synthetic(None, population, epsilon, sizes=AttackSizes(
            n_private=sizes["n"], n_targets=sizes["targets"], n_shadows=sizes["shadows"],
            n_attacks=sizes["attacks"]), seed=args.seed, white_box=args.white_box)
        private = population.sample(sizes["n"], random_state=args.seed)
        utility = release_utility(private, population, epsilon, data.label, args.seed,
                                  sizes["releases"])
        low, high = result.ci
        print(f"ε = {epsilon:g}: success {result.success_rate:.3f} [{low:.3f}, {high:.3f}] "
              f"baseline {result.baseline:.3f} ({sum(result.seconds.values()):.0f} s); "
              f"{sizes['releases']} releases: mean JS {utility['js_distance_mean']:.3f} ± "
              f"{utility['js_distance_mean_sd']:.3f}, AUC synthetic "
              f"{utility['auc_synthetic']:.3f} ± {utility['auc_synthetic_sd']:.3f}, private "
              f"{utility['auc_private']:.3f}")
        point = {**result.summary(), "utility": utility}
        if args.anonymeter_python is not None:
            figures = anonymeter_check.evaluate(
                *anonymeter_check.tables(private, population, epsilon, args.seed),
                python=args.anonymeter_python, seed=args.seed)
            point["anonymeter"] = figures
            print(f"  anonymeter: {_anonymeter_line(figures)}")
        points.append(point)
    name = "smoke" if args.smoke else args.dataset + ("_white_box" if args.white_box else "")
    out = args.out or BENCH_DIR / "results" / f"synthetic_{name}.json"
    write_json(out, {"environment": environment(), "sizes": sizes, "dataset": args.dataset,
                     "fit_seconds_1000_rows": seconds, "points": points})
    kind = "white box" if args.white_box else "black box"
    out.with_suffix(".png").write_bytes(tradeoff_png(
        [{**plot_point(p), "white_box": args.white_box} for p in points],
        f"{args.dataset}, PrivBayes ({kind}), |X| = {sizes['n']}, |D| = {5 * sizes['n']}"))
    print(f"wrote {out} and {out.with_suffix('.png')}")
    return 0


def plot_point(point: dict) -> dict:
    """A point of the JSON as the trade-off plot reads it."""
    low, high = point["ci"]
    return {**point, **point["utility"], "ci_low": low, "ci_high": high}


def _anonymeter_line(figures: dict) -> str:
    """anonymeter's risk, interval and counts in one line, or why it did not run."""
    if "risk" not in figures:
        return figures["failed"]
    low, high = figures["ci"]
    return (f"risk {figures['risk']:.3f} [{low:.3f}, {high:.3f}]; {figures['n_success']} of "
            f"{figures['n_attacks']} predicates single out a row of X, baseline "
            f"{figures['n_baseline']}, control {figures['n_control']:g}")


if __name__ == "__main__":
    raise SystemExit(main())
