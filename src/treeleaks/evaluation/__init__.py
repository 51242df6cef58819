"""Scoring a reconstruction against the truth: errors, matchings and baselines."""
