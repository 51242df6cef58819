"""Reconstruction when some trees have no counts (XGBoost's trees after the first).

Such a tree speaks only through its gradient sums, which bind the solver over listed cells
but not column generation or the row search (`treeleaks.counts.gradient_rows`). So the
whole model is tried by listing its cells within a share of the time; when listing or its
MIP does not fit, the rest of the time goes to the trees with counts alone, and the
certificate still checks the rows against every tree's leaf values.
"""

from __future__ import annotations

from dataclasses import replace

from treeleaks.attacks.reconstruction.exact import reconstruct_exact
from treeleaks.attacks.reconstruction.options import RunOptions
from treeleaks.counts.cells import CellBudget
from treeleaks.counts.verify import verify
from treeleaks.ir.model import ReleasedModel
from treeleaks.ir.schema import FeatureSchema
from treeleaks.result import Reconstruction
from treeleaks.runtime.vocabulary import Status, Strategy

# Of the time limit, for the whole model's cells and their MIP. The trees with counts alone
# (XGBoost: tree 0) are solved in well under a second and tell little, so the whole model
# gets most of the time.
LISTING_SHARE = 0.8
# Memory the whole model's cells may take (a run's own budget when smaller): bounded like
# `auto`'s, so the trees with counts keep their time.
# Figures: docs/lab/2026-11-28-constants.md#attacks-uncounted_trees
LISTING_MEMORY_MB = 512.0


def has_uncounted(model: ReleasedModel) -> bool:
    return any(not tree.counted for tree in model.trees)


def counted_only(model: ReleasedModel) -> ReleasedModel:
    """The model's trees up to the first without counts (later trees' gradient sums read
    the scores the earlier ones give, so the prefix keeps theirs)."""
    keep = next(t for t, tree in enumerate(model.trees) if not tree.counted)
    gradients = model.gradients
    if gradients is not None:
        gradients = replace(gradients, values=gradients.values[:keep],
                            sums=gradients.sums[:keep])
    return replace(model, trees=model.trees[:keep], gradients=gradients)


def reconstruct_with_uncounted(model: ReleasedModel, schema: FeatureSchema, run: RunOptions,
                               solver: str, strategy: str) -> Reconstruction:
    """Every tree over listed cells, else the trees with counts (see the module doc)."""
    if strategy == Strategy.ENUMERATE:
        return reconstruct_exact(model, schema, run, solver=solver, strategy=strategy)
    note = ""
    left = run.time_limit
    if strategy == Strategy.AUTO:
        budget = run.cell_budget or CellBudget()
        first = replace(run, time_limit=run.time_limit * LISTING_SHARE,
                        certainty_time_limit=min(run.certainty_time_limit,
                                                 run.time_limit * LISTING_SHARE / 2),
                        cell_budget=replace(budget, memory_mb=min(budget.memory_mb,
                                                                  LISTING_MEMORY_MB)))
        whole = reconstruct_exact(model, schema, first, solver=solver,
                                  strategy=Strategy.ENUMERATE)
        if whole.n_rows or whole.status == Status.INFEASIBLE:  # proven over every cell
            return whole
        left = max(run.time_limit - whole.time_s, 1.0)
        note = (f"every tree's cells did not fit ({whole.message}); the {_counted(model)} "
                "tree(s) with counts were reconstructed alone")
    else:
        note = (f"strategy {strategy!r} does not read trees without counts; the "
                f"{_counted(model)} tree(s) with counts were reconstructed alone")
    rest = replace(run, time_limit=left,
                   certainty_time_limit=min(run.certainty_time_limit, left / 2))
    part = counted_only(model)
    result = reconstruct_exact(part, schema, rest, solver=solver, strategy=strategy)
    if result.n_rows == model.n_rows:  # checked against the whole model's leaf values too
        result.certificate = verify(model, result.rows)
    result.message = "; ".join(m for m in (note, result.message) if m)
    result.time_s += run.time_limit - left
    return result


def _counted(model: ReleasedModel) -> int:
    return sum(tree.counted for tree in model.trees)
