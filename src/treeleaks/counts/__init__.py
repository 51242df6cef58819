"""The count engine every forest attack shares: cells, the count system and its
propagation, solvers, certainty bounds, rows from counts, and the certificate."""
