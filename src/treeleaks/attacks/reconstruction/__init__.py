"""The reconstruction's internals: one module per formulation (exact counts, known and
unknown draws, row by row, DP counts, regressors, boosted models, trees without counts),
the stages they share (the row and draw searches, the pinning probe, placement bounds,
side knowledge) and `reconstruct`'s options as data (`options`, `route_options`). The one
entry point is `treeleaks.attacks.reconstruct`; nothing here is public API."""
