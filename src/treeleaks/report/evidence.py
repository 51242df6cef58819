"""The attacks an audit runs, each a thin call into the library that records what it found.

Every step takes the audit's input and the evidence gathered so far, calls the library
function the matching command calls (`reconstruct`, `single_out`, `tree_reconstruction`
with `summarize`, `worst_case`, `leak_test`), stores the result object in `Evidence` for
the verdict and the custodian's table, and returns an `AttackRun` with the figures under
the names the separate commands use. Errors are left to `treeleaks.report.collect`, which
lists a step that raised as failed.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from treeleaks.report.findings import (
    COMPLETE,
    FAILED,
    NOT_APPLICABLE,
    PARTIAL,
    AttackRun,
    ran_out_of_time,
)
from treeleaks.runtime.vocabulary import Formulation, Status

if TYPE_CHECKING:
    from treeleaks.attacks.singling_out import Exposure, SinglingOut
    from treeleaks.evaluation.entropy import LeakSummary
    from treeleaks.evaluation.leak_or_distribution import LeakTest
    from treeleaks.evaluation.metrics import ReconstructionScore
    from treeleaks.ir.model import ReleasedModel
    from treeleaks.ir.schema import FeatureSchema
    from treeleaks.result import Reconstruction
    from treeleaks.runtime.progress import ProgressCallback

RECONSTRUCT_TITLE = "Reconstruction of the training set from the counts"
SCORING_S_PER_MROWS2 = 6.0  # scoring 1,000 rows (a matching, twelve for the baseline): ~6 s


@dataclass
class AuditInput:
    """What the audit is given: the model (and the scikit-learn object when the file holds
    one), the schema as given (None: the one the model implies), the custodian's training
    rows with their label column, rows of the same population that were not trained on,
    and ``total_budget``, the whole audit's seconds (`treeleaks.report.collect.run_audit`
    shares it among the steps and hands each its share as ``seconds``; a step called alone
    is given its seconds the same way); ``attack_budget`` caps each attack's share (None:
    no cap)."""

    model: ReleasedModel
    path: str
    schema: FeatureSchema | None = None
    estimator: Any = None
    data: pd.DataFrame | None = None
    label: str | None = None
    population: pd.DataFrame | None = None
    total_budget: float = 300.0
    attack_budget: float | None = None
    release_table: dict[str, Any] | None = None  # a `treeleaks release` run's candidates.json

    @property
    def bound(self) -> FeatureSchema:
        from treeleaks.ir.schema import FeatureSchema

        given = self.schema if self.schema is not None else FeatureSchema.for_model(self.model)
        return given.bind(self.model)

    @property
    def truth(self) -> pd.DataFrame | None:
        """The custodian's rows with the model's columns and its label column."""
        if self.data is None:
            return None
        columns = [*self.model.feature_names, self.label]
        return self.data[columns].rename(columns={self.label: self.model.label_name})

    @property
    def data_schema(self) -> FeatureSchema:
        """The columns' domains for scoring against the data (as `treeleaks leak-test`)."""
        from treeleaks.ir.schema import FeatureSchema

        features = self.data[self.model.feature_names]
        return (FeatureSchema.from_frame(features) if self.schema is None
                else self.schema.completed(features))


@dataclass
class Evidence:
    """The result objects of the steps that ran (None: not run)."""

    recon: Reconstruction | None = None
    score: ReconstructionScore | None = None
    row_error: np.ndarray | None = None
    singling: SinglingOut | None = None
    guesses: SinglingOut | None = None  # the leaves a stripped copy still lets one guess
    exposure: Exposure | None = None
    leaks: list[LeakSummary] = field(default_factory=list)
    leak_test: LeakTest | None = None


def engine_seconds(seconds: float, n_data_rows: int | None) -> float:
    """The reconstruction engine's limit within a step's ``seconds`` when the rows it
    returns are then scored against ``n_data_rows`` rows of the custodian's (None: not
    scored): the scoring's cost is set aside, at most half of the share (the budget's rule,
    `treeleaks.report.budget`)."""
    if n_data_rows is None or not math.isfinite(seconds):
        return seconds
    scoring = SCORING_S_PER_MROWS2 * (n_data_rows / 1000) ** 2
    return max(seconds - scoring, seconds / 2)


def reconstruction(inp: AuditInput, seconds: float, ev: Evidence,
                   progress: ProgressCallback | None) -> AttackRun:
    """The forest reconstruction (`treeleaks reconstruct`) within ``seconds``, scored
    against the data."""
    from treeleaks.attacks.reconstruct import reconstruct

    model = inp.model
    infer_n = model.noise is not None and model.facts.get("n_rows") is None
    limit = engine_seconds(seconds, None if inp.data is None else len(inp.data))
    recon = reconstruct(model, inp.bound, time_limit=limit, progress=progress,
                        certainty_time_limit=limit, n_unknown=infer_n)
    ev.recon = recon
    figures = _recon_figures(recon)
    if inp.data is not None and recon.n_rows:
        figures.update(_scored(inp, ev, recon))
    if recon.status == Status.INFEASIBLE:
        return AttackRun("reconstruct", RECONSTRUCT_TITLE, FAILED, "no dataset reproduces the "
                         f"counts: {recon.message or 'the counts contradict each other'}",
                         recon.time_s, figures)
    return engine_run("reconstruct", RECONSTRUCT_TITLE, recon, limit, figures)


def _recon_figures(recon: Reconstruction) -> dict[str, Any]:
    """The reconstruction's figures under `treeleaks reconstruct`'s names, with a
    regressor's targets, a DP forest's likelihood, how tightly values are pinned, and
    whether it is partial or was interrupted."""
    s = recon.summary()
    figures: dict[str, Any] = {k: s[k] for k in (
        "status", "formulation", "n_rows", "proven_rows", "proven_pattern_rows",
        "free_values", "verified", "certainty_complete", "n_cells", "strategy")}
    if recon.regression is not None:  # a regressor's: targets given away exactly
        figures["targets_exact"] = recon.regression.targets_exact
    if recon.dp is not None:
        figures.update({k: s[k] for k in ("log_likelihood", "log_likelihood_bound",
                                          "likelihood_checked", "n_rows_interval")})
    figures.update(_intervals(recon))
    figures["pinned_rows"] = pinned_rows(recon)
    figures["proven_pinned_rows"] = int((pinned(recon) & recon.proven.astype(bool)).sum()) \
        if recon.n_rows else 0
    if recon.partial:
        figures["partial"] = True
    if recon.interrupted:  # Ctrl-C: the audit stops after this attack (`collect`)
        figures["interrupted"] = True
    return figures


def _scored(inp: AuditInput, ev: Evidence, recon: Reconstruction) -> dict[str, Any]:
    """The rebuilt rows scored against the custodian's (`evaluate`, `row_errors`, the rows
    recovered), the scores kept in ``ev``."""
    from treeleaks.evaluation.metrics import evaluate, row_errors

    truth, label = inp.truth, inp.model.label_name
    ev.score = evaluate(truth, recon.rows, inp.data_schema, label=label)
    ev.row_error = row_errors(truth, recon.rows, inp.data_schema, label=label)
    return {"error": ev.score.error, "baseline_error": ev.score.baseline_error,
            "exact_share": ev.score.exact_share,
            "exact_rows": round(ev.score.exact_share * ev.score.n_true),
            "label_agreement": ev.score.label_agreement,
            **recovered_rows(inp.model, truth, recon.rows, inp.data_schema)}


def engine_run(name: str, title: str, recon: Reconstruction, limit: float,
               figures: dict[str, Any]) -> AttackRun:
    """The record of a run of the reconstruction engine given ``limit`` seconds: partial
    when `shortfall` says so, cut short when it used its time (its own clock: the step
    keeps part of its share for scoring against the data)."""
    why = shortfall(recon, limit)
    return AttackRun(name, title, PARTIAL if why else COMPLETE, why or _note(recon),
                     recon.time_s, figures,
                     cut_short=bool(why) and recon.formulation not in MODEL_LIMITED
                     and ran_out_of_time(recon.time_s, limit))


def _intervals(recon: Reconstruction) -> dict[str, float]:
    """How tightly the rows' numerical values are pinned: the mean interval (a share of
    the column's range) and the share of values within 1, 5 and 10% of it."""
    pinned = recon.pinned_within()
    if not pinned:
        return {}
    return {"mean_interval_width": recon.summary()["numerical_width_mean"],
            **{f"pinned_within_{share[:-1]}pct": value for share, value in pinned.items()}}


def pinned_rows(recon: Reconstruction, share: float = 0.05) -> int:
    """Rebuilt rows the file pins: every value determined, a numerical one within ``share``
    of its column's range (a proven row with wide intervals is not pinned)."""
    return int(pinned(recon, share).sum())


def pinned(recon: Reconstruction, share: float = 0.05) -> np.ndarray:
    """Per rebuilt row, whether the file pins it (see `pinned_rows`)."""
    if not recon.n_rows:
        return np.zeros(0, dtype=bool)
    features = list(recon.free.columns)
    widths = (recon.width.reindex(columns=features).to_numpy(dtype=float)
              if recon.width is not None else np.full((recon.n_rows, len(features)), np.nan))
    measured = np.isfinite(widths)
    open_value = recon.free[features].to_numpy(dtype=bool) & ~measured
    narrow = np.where(measured, widths <= share, True)
    return (narrow & ~open_value).all(axis=1)


def recovered_rows(model: ReleasedModel, truth: pd.DataFrame, rows: pd.DataFrame,
                   schema: FeatureSchema) -> dict[str, Any]:
    """The custodian's rows recovered (`treeleaks.evaluation.recovered`: matched one to one
    with a rebuilt row of their label that shares their leaf in 90% of the trees that drew
    them), as a count and a share. A reconstruction is a multiset: the positions its rows
    come back at are not scored. The audit and the demo report both."""
    from treeleaks.evaluation.recovered import References, rows_recovered

    score = rows_recovered(model, truth, rows, schema,
                           references=References(n_random=0, true_boxes=False))
    return {"rows_recovered": score.rows_recovered, "recovered_share": score.recovered_share}


# formulations whose partial result is what the model gives, not what the budget allowed:
# leaves of several rows keep the rest apart
MODEL_LIMITED = (Formulation.REGRESSION_LEAVES, Formulation.REGRESSION_BOOSTED)


def shortfall(recon: Reconstruction, limit: float) -> str:
    """Why a reconstruction's figures are only lower bounds ("" when they are not): what it
    holds and what stopped it, when the engine says (the time, and whether it ran out of
    its ``limit``, are stated beside from the measured times: `AttackRun.words`)."""
    lower = "the figures are lower bounds"
    stopped = f": {' '.join(recon.message.split())}" if recon.message else ""
    if recon.partial and recon.formulation in MODEL_LIMITED:
        fits = ("fits every count" if recon.verified else
                "lies in the leaves' boxes, its filled values not fitting every count")
        return (f"leaves of several rows keep a complete dataset out of reach: a partial "
                f"dataset of "
                f"{recon.n_rows} rows {fits}; {lower}")
    if recon.partial:  # rows that fit every count are not proven to be training rows
        return (f"no complete reconstruction: a partial dataset of {recon.n_rows} rows "
                f"fits every count, {recon.proven_rows} of them proven training rows; {lower}")
    if recon.status == Status.UNKNOWN:
        return f"no complete reconstruction{stopped}; {lower}"
    if recon.status == Status.FEASIBLE and ran_out_of_time(recon.time_s, limit):
        return f"the best dataset found in the time, not proven the best; {lower}"
    if recon.formulation == Formulation.EXACT and not recon.certainty_complete:
        return f"the proofs were not completed; {lower}"
    return ""


def _note(recon: Reconstruction) -> str:
    """What a complete run still says about its result."""
    if recon.status == Status.FEASIBLE:
        return ("the best dataset found, not proven the best"
                + (f" ({recon.message})" if recon.message else ""))
    return ""


def singling_out(inp: AuditInput, seconds: float, ev: Evidence) -> AttackRun:
    """Predicate singling out (`treeleaks single-out`) within ``seconds``, checked against
    the data."""
    from treeleaks.attacks import singling_out as so

    model = inp.model
    result = so.single_out(model, time_limit=seconds, schema=inp.schema)
    ev.singling = result
    figures: dict[str, Any] = {
        "n_predicates": len(result.predicates), "n_proven": result.n_proven,
        "rows_singled_out_at_least": rows_singled_out_bound(model, result),
        "shortest_predicate": min((len(p.conditions) for p in result.predicates), default=None),
        "notes": result.notes,
    }
    trees = [so.tries_without_counts(model, t) for t in range(model.n_trees)]
    found = [tr.expected for tr in trees if tr.expected is not None]
    figures["mean_expected_tries_without_counts"] = float(np.mean(found)) if found else None
    figures["open_guesses"] = so.open_guesses(model)
    if inp.data is not None:
        _check_with_guesses(inp, ev, figures)
    cut = [n for n in result.notes if n.startswith(so.CELLS_CUT)]
    why = (f"{cut[0]}: rows a forest's cells single out were not all found (lower bound)"
           if cut else "")
    return AttackRun("single-out", "Predicate singling out",
                     PARTIAL if result.status == Status.PARTIAL else COMPLETE, why, 0.0, figures)


def _check_with_guesses(inp: AuditInput, ev: Evidence, figures: dict[str, Any]) -> None:
    """Check the predicates against the data, and the guesses a stripped copy would still
    allow too: whoever holds the file can make them, so the rows they single out count
    (the file never audits lower than its stripped copy)."""
    from treeleaks.attacks import singling_out as so

    model = inp.model
    counted = so.check_against_data(ev.singling, model, inp.data, inp.label)
    ev.guesses = so.no_counts_guesses(model)
    guessed = so.check_against_data(ev.guesses, model, inp.data, inp.label)
    rows = sorted(set(counted.singled_out) | set(guessed.singled_out))
    ev.exposure = so.Exposure(counted.n_rows, rows, counted.n_valid, counted.n_checked)
    figures.update(rows_singled_out=len(rows), predicates_matching_one_row=counted.n_valid,
                   rows_singled_out_by_predicates=len(counted.singled_out),
                   rows_singled_out_by_guesses=len(guessed.singled_out))


def guessing(inp: AuditInput, ev: Evidence) -> AttackRun:
    """Singling out from a file whose counts were removed (`treeleaks single-out
    --no-counts`): the adversary's guesses, leaves deepest first, checked against the data
    when given (with the tries the ranking needs, measured there)."""
    from treeleaks.attacks import singling_out as so

    model = inp.model
    result = so.no_counts_guesses(model)
    ev.singling = result
    figures: dict[str, Any] = {"n_predicates": len(result.predicates), "n_proven": 0,
                               "counts_removed": True, "notes": result.notes}
    why = ("the counts were removed: no guess is proven, and without your rows (--data) "
           "none can be checked")
    if inp.data is not None:
        ev.exposure = so.check_against_data(result, model, inp.data, inp.label)
        tries = [so.tries_without_counts(model, t, so.measured_leaf_counts(
            model, inp.data, inp.label, t)).expected for t in range(model.n_trees)]
        found = [t for t in tries if t is not None]
        figures.update(rows_singled_out=len(ev.exposure.singled_out),
                       predicates_matching_one_row=ev.exposure.n_valid,
                       mean_expected_tries_without_counts=float(np.mean(found))
                       if found else None)
        why = ("the counts were removed: the guesses are unproven, checked here against "
               "your rows")
    return AttackRun("single-out", "Singling out without counts (the adversary's guesses)",
                     COMPLETE, why, 0.0, figures)


def rows_singled_out_bound(model: ReleasedModel, result: SinglingOut) -> int:
    """Training rows proven singled out without the data: the leaves of one tree (and the
    cells of the forest) are disjoint, so their proven predicates single out different
    rows; the most any one tree (or the cells) gives is a sound lower bound."""
    per_source: dict[Any, int] = {}
    for p in result.predicates:
        if not p.proven:
            continue
        leaf = p.tree is None or model.trees[p.tree].feature[p.node] < 0
        if leaf:
            per_source[p.tree] = per_source.get(p.tree, 0) + 1
    return max(per_source.values(), default=0)


def entropy_leak(inp: AuditInput, seconds: float, ev: Evidence) -> AttackRun:
    """The probabilistic reconstruction of each tree alone (`treeleaks leak`): dist and
    dist_g, tree by tree until ``seconds`` run out."""
    from treeleaks.attacks.probabilistic import tree_reconstruction
    from treeleaks.evaluation.entropy import summarize

    deadline = time.perf_counter() + seconds
    counted = [t for t, tree in enumerate(inp.model.trees) if tree.counted]  # XGBoost: tree 0
    for t in counted:
        if time.perf_counter() > deadline:
            break
        ev.leaks.append(summarize(tree_reconstruction(inp.model, inp.schema, tree=t)))
    short = len(ev.leaks) < len(counted)
    title = ("Probabilistic reconstruction of the tree" if inp.model.n_trees == 1 else
             "Probabilistic reconstruction of each tree alone (the most revealing one)")
    return AttackRun("leak", title, PARTIAL if short else COMPLETE,
                     _trees_unmeasured(len(ev.leaks), len(counted), inp.model.n_trees), 0.0,
                     _leak_figures(ev.leaks, counted, inp.model.n_trees))


def _leak_figures(leaks: list[LeakSummary], counted: list[int], n_trees: int
                  ) -> dict[str, Any]:
    """The most revealing tree's figures (the quantiles for a lone tree), and the median
    dist_g of a forest's trees."""
    dist_g = [s.dist_g for s in leaks]
    best = int(np.argmin(dist_g))
    figures: dict[str, Any] = {
        "dist_g": dist_g[best], "dist": leaks[best].dist, "tree": counted[best],
        "trees_measured": len(leaks), "n_trees": n_trees,
        "rows_fully_determined": fully_determined(leaks[best]),
        "quantiles": {str(k): v for k, v in leaks[0].quantiles.items()} if len(leaks) == 1
        else None,
    }
    if n_trees > 1:
        figures["dist_g_median"] = float(np.median(dist_g))
    return figures


def _trees_unmeasured(measured: int, counted: int, n_trees: int) -> str:
    """Why trees went unmeasured: the budget ran out, or they hold no counts ("": none)."""
    why = (f"measured {measured} of {counted} trees within the budget; the most revealing "
           "tree may be among the others" if measured < counted else "")
    if counted < n_trees:
        why = "; ".join(w for w in (why, f"{n_trees - counted} trees have no counts to "
                                    "measure (their leaf values are read by the "
                                    "reconstruction)") if w)
    return why


def fully_determined(summary: LeakSummary) -> int:
    """Rows whose leaf admits one attribute vector: every value known (ratio 0)."""
    held = summary.support > 0
    return int(summary.support[held & (summary.path_ratio == 0)].sum())


def worst_case_bound(inp: AuditInput, seconds: float) -> AttackRun:
    """The custodian's proven bound for a bootstrap forest with known draws
    (`treeleaks worst-case`), within ``seconds``."""
    from treeleaks.attacks.worst_case import worst_case

    result = worst_case(inp.model, inp.bound, truth=inp.truth, time_limit=seconds)
    s = result.summary()
    done = s["status"] == Status.OPTIMAL
    return AttackRun("worst-case", "Worst case over every dataset that reproduces the model",
                     COMPLETE if done else PARTIAL,
                     "" if done else f"status {s['status']}: {s['message']}", s["time_s"], s)


def leak_or_distribution(inp: AuditInput, ev: Evidence) -> AttackRun:
    """Is the reconstruction the training data or only the population
    (`treeleaks leak-test`)?"""
    from treeleaks.evaluation.leak_or_distribution import leak_test

    if ev.recon is None or not ev.recon.n_rows:
        return AttackRun("leak-test", "Leak or distribution?", NOT_APPLICABLE,
                         "the reconstruction rebuilt no rows to test")
    truth = inp.truth
    population = inp.population.rename(columns={inp.label: inp.model.label_name})
    ev.leak_test = leak_test(ev.recon.rows, truth=truth, population=population,
                             schema=inp.data_schema,
                             label=inp.model.label_name)
    return AttackRun("leak-test", "Leak or distribution?", COMPLETE, "", 0.0,
                     ev.leak_test.summary())
