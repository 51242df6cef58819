"""Differentially private synthetic data (PrivBayes) and the singling-out attack on it
(Sedlmeyr 2024, part 1): what a released synthetic table reveals about its private rows."""
