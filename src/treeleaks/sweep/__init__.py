"""Sweeps: a grid of (dataset, N, trees, depth, ε, seed, ...) points, each trained,
attacked and scored, run on Dask locally or on a cluster, resumable."""

from treeleaks.sweep.grid import Grid, GridError, load_grid
from treeleaks.sweep.runner import SweepError, read_records, run_sweep

__all__ = ["Grid", "GridError", "SweepError", "load_grid", "read_records", "run_sweep"]
