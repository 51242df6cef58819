"""What anonymeter is given: the private table, one release of it and control rows from
outside it, all as the categories PrivBayes reads (anonymeter itself runs in its own
environment: see test_synthetic_cli.py)."""

from __future__ import annotations

from treeleaks.synthetic.anonymeter_check import tables

from conftest import outlier_population


def test_anonymeter_reads_x_one_release_and_control_rows_outside_x() -> None:
    population = outlier_population(n=100, outliers=4)
    private = population.sample(20, random_state=0)
    original, synthetic, control = tables(private, population, 10.0, seed=0)
    assert original.equals(private.astype(str).reset_index(drop=True))
    assert len(synthetic) == len(control) == 20
    assert list(synthetic.columns) == list(population.columns)
    rows = set(map(tuple, population.astype(str).to_numpy()))
    outside = set(map(tuple, control.to_numpy()))
    assert len(outside) == 20 and outside <= rows
    assert not outside & set(map(tuple, original.to_numpy()))
