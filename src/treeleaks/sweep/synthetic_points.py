"""Sweep points that run the singling-out attack on PrivBayes releases (Sedlmeyr 2024,
part 1) with the study's protocol: a population D of 5·n distinct rows of a dataset (its
groups turned back into categorical attributes), private tables of n rows sampled from it
afresh for every release (|X|/|D| = 0.2), the attack trained on shadow pairs drawn from D."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

POPULATION_FACTOR = 5  # |D| = 5·|X|, the study's |X|/|D| = 0.2
UTILITY_RELEASES = 5  # the utility is averaged over this many releases (mean and sd)


def run_synthetic_point(point: dict[str, Any], data_dir: Path | None) -> dict[str, Any]:
    """One (dataset, n, ε, box) point: the success rate with its interval, the baseline,
    and the utility averaged over releases of one private sample."""
    from treeleaks.sweep.datasets import DatasetError, load_dataset
    from treeleaks.synthetic.singling_out import AttackSizes, single_out_synthetic
    from treeleaks.synthetic.utility import release_utility

    data = load_dataset(point["dataset"], data_dir)
    table = data.categorical().drop_duplicates(ignore_index=True)
    size = POPULATION_FACTOR * point["n"]
    if size > len(table):
        raise DatasetError(f"{data.name} has {len(table)} distinct rows once its groups are "
                           f"categorical; n = {point['n']} needs {size}")
    rng = np.random.default_rng(point["seed"])
    population = table.iloc[np.sort(rng.choice(len(table), size, replace=False))]
    start = time.perf_counter()
    result = single_out_synthetic(
        None, population, point["epsilon"],
        sizes=AttackSizes(n_private=point["n"], n_targets=point["targets"],
                          n_shadows=point["shadows"], n_attacks=point["attacks"]),
        seed=point["seed"], white_box=point["white_box"],
        deadline=time.monotonic() + point["time_limit"])
    elapsed = time.perf_counter() - start
    private = population.sample(point["n"], random_state=point["seed"])
    utility = release_utility(private, population, point["epsilon"], data.label,
                              point["seed"], UTILITY_RELEASES)
    low, high = result.ci
    return {"status": result.status, "success_rate": result.success_rate, "ci_low": low,
            "ci_high": high, "baseline": result.baseline, "attacks_made": result.attacks,
            "time_s": elapsed, "js_distance_mean": utility["js_distance_mean"],
            "js_distance_mean_sd": utility["js_distance_mean_sd"],
            "auc_synthetic": utility["auc_synthetic"],
            "auc_synthetic_sd": utility["auc_synthetic_sd"], "auc_private": utility["auc_private"],
            "utility_releases": UTILITY_RELEASES,
            "notes": result.notes}
