"""The defences an audit proposes, each with its effect on this model measured (prune to k,
strip the random states), measured by the custodian's own release search, or, for
retraining with DP, cited from the project's benchmark. A defence without a number behind it
is not proposed: without a release run the audit names the command that measures one."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from treeleaks.report import dp_costs
from treeleaks.report.evidence import AuditInput, Evidence, engine_run, engine_seconds
from treeleaks.report.findings import COMPLETE, NOT_APPLICABLE, AttackRun, Defence
from treeleaks.runtime.errors import TreeleaksError

if TYPE_CHECKING:
    from treeleaks.frontends.registry import Reader
    from treeleaks.ir.model import NoiseMechanism
    from treeleaks.runtime.progress import ProgressCallback

PRUNE_K = 2  # the smallest k that removes every vulnerable node


def strip_command(path: str) -> str | None:
    """The exact ``treeleaks strip`` command that writes the release-safe copy of the file
    at ``path`` (None: a file strip refuses, such as a treeleaks JSON model), its format
    told as every command tells it."""
    file = Path(path)
    reader = _reader(file)
    if reader is None or reader.name in ("treeleaks", "rule list"):
        return None
    trust = " --trust-pickle" if reader.runs_code else ""
    return f"treeleaks strip {path} --out {file.stem}.stripped{file.suffix}{trust}"


def _reader(file: Path) -> Reader | None:
    """The registry's reader of ``file`` (None: unreadable, or of no format it reads)."""
    from treeleaks.frontends.registry import ModelFile, reader_for

    try:
        return reader_for(ModelFile(file))
    except (TreeleaksError, OSError):
        return None


def _with_command(title: str, path: str) -> str:
    command = strip_command(path)
    return title if command is None else f"{title}: {command}"


def prune_effect(inp: AuditInput, seconds: float) -> tuple[AttackRun, Defence | None]:
    """Prune the scikit-learn model so no node shows a count below `PRUNE_K`
    (`treeleaks prune`), re-run singling out on it within ``seconds``, and score it before
    and after on the custodian's rows."""
    from treeleaks.attacks.singling_out import single_out
    from treeleaks.defences.prune import PRUNABLE, prune
    from treeleaks.frontends.sklearn import from_sklearn

    title = f"Pruning to k = {PRUNE_K}"
    kind = type(inp.estimator).__name__
    if inp.estimator is None or kind not in PRUNABLE:
        why = ("needs the scikit-learn object (a .skops file, or a pickle with "
               "--trust-pickle)" if inp.estimator is None else f"cannot prune a {kind}")
        return AttackRun("prune", title, NOT_APPLICABLE, why), None
    pruned, summary = prune(inp.estimator, PRUNE_K)
    left = single_out(from_sklearn(pruned, allow_regression=True), cells=False,
                      time_limit=seconds)
    figures: dict[str, Any] = {
        "min_count": PRUNE_K, "nodes_before": summary.nodes_before,
        "nodes_after": summary.nodes_after, "leaves_before": summary.leaves_before,
        "leaves_after": summary.leaves_after, "predicates_left": len(left.predicates)}
    effect = (f"no node shows a count below {PRUNE_K}: {len(left.predicates)} "
              f"singling-out predicates left; {summary.nodes_before:,} → "
              f"{summary.nodes_after:,} nodes")
    if inp.data is not None:
        X, y = inp.data[inp.model.feature_names], inp.data[inp.label]
        before, after = inp.estimator.score(X, y), pruned.score(X, y)
        metric = "R²" if inp.model.is_regression else "accuracy"
        figures.update(metric=metric, accuracy_before=before, accuracy_after=after)
        effect += f"; {metric} on your rows {before:.4f} → {after:.4f}"
    if inp.model.n_trees > 1:
        effect += ("; every tree is pruned, but the forest's reconstruction still reads the "
                   "counts that remain")
    run = AttackRun("prune", title, COMPLETE, "", 0.0, figures)
    return run, Defence(f"Prune to k = {PRUNE_K} (treeleaks prune --min-count {PRUNE_K})",
                        effect, figures, "measured on this model")


def strip_random_states(inp: AuditInput, seconds: float, ev: Evidence,
                        progress: ProgressCallback | None = None
                        ) -> tuple[AttackRun, Defence | None]:
    """Re-run the bootstrap attack without the per-tree draws the random states give away
    (``ignore_draws``) within ``seconds`` and set it beside the attack with them."""
    from treeleaks.attacks.reconstruct import reconstruct
    from treeleaks.evaluation.metrics import evaluate

    title = "The bootstrap attack without the random states"
    limit = engine_seconds(seconds, None if inp.data is None else len(inp.data))
    without = reconstruct(inp.model, inp.bound, time_limit=limit,
                          ignore_draws=True, progress=progress)
    s = without.summary()
    figures: dict[str, Any] = {"status": s["status"], "formulation": s["formulation"],
                               "n_rows": s["n_rows"], "proven_rows": s["proven_rows"]}
    found = ev.recon is not None and ev.recon.n_rows > 0
    with_states = (f"with the draws the attack rebuilt {ev.recon.n_rows} rows "
                   f"({ev.recon.proven_rows} proven)" if found else "with the draws the attack "
                   "found no complete reconstruction within the budget")
    effect = f"{with_states}; without them, {s['n_rows']} rows ({s['proven_rows']} proven)"
    if inp.data is not None and without.n_rows:
        score = evaluate(inp.truth, without.rows, inp.data_schema, label=inp.model.label_name)
        exact = round(score.exact_share * score.n_true)
        figures.update(error=score.error, exact_rows=exact)
        effect += f", {exact} of your rows rebuilt exactly (error {score.error:.4f}"
        if ev.score is not None:
            figures.update(error_with_states=ev.score.error,
                           exact_rows_with_states=round(ev.score.exact_share * ev.score.n_true))
            effect += (f", against {figures['exact_rows_with_states']} and "
                       f"{ev.score.error:.4f} with the draws")
        effect += ")"
    run = engine_run("strip-random-states", title, without, limit, figures)
    return run, Defence(_with_command("Release the trees without their random states (they "
                                      "regenerate each tree's bootstrap draws)", inp.path),
                        effect, figures,
                        "measured on this model")


def retrain_with_dp(noise: NoiseMechanism | None) -> Defence:
    """Retraining as a DP forest: the benchmark's figures at each ε, cited (``noise``: the
    audited model's own mechanism, if it is DP already)."""
    rows = {f"{dataset} eps={eps:g}": cost._asdict()
            for (dataset, eps), cost in dp_costs.MEASURED.items()}
    at5 = {d: c for (d, e), c in dp_costs.MEASURED.items() if e == 5.0}
    effect = ("at ε = 5 the DP attack still rebuilt " + ", ".join(
        f"{c.perfect_share:.0%} of {d}'s rows exactly (error {c.error:.3f} vs random "
        f"{c.baseline:.3f}, test accuracy {c.test_accuracy:.3f})" for d, c in at5.items())
              + "; ε = 1 lowers that to " + ", ".join(
        f"{dp_costs.MEASURED[(d, 1.0)].perfect_share:.0%}" for d in at5)
              + ": DP limits, but does not stop, reconstruction")
    if noise is not None:
        effect = (f"this model is already DP with ε = {noise.epsilon:g}; "
                  + effect.replace("at ε = 5", "for comparison, at ε = 5"))
    return Defence("Retrain as a differentially private forest (treeleaks train-dp)", effect,
                   rows, dp_costs.SOURCE)


def strip_counts(singling: AttackRun | None, path: str,
                 guesses_single_out: int | None = None) -> Defence | None:
    """Releasing the trees without their counts (``treeleaks strip``, the command for the
    file at ``path``): how many guesses an adversary then needs to
    single out a row (the deepest-first ranking, measured on this model's counts), and the
    level the stripped file audits at: ``guesses_single_out`` is how many of the
    custodian's rows its guesses single out (None: no data, so its level is presumed)."""
    tries = None if singling is None else singling.figures.get(
        "mean_expected_tries_without_counts")
    if tries is None or not singling.figures.get("n_predicates"):
        return None
    effect = (f"no predicate is proven any more, and an adversary guessing leaves deepest "
              f"first needs {tries:.1f} tries on average before one singles out a row "
              "(measured with this model's counts)")
    figures: dict[str, Any] = {"mean_expected_tries_without_counts": tries}
    if guesses_single_out is None:
        effect += ("; the stripped file still audits HIGH (presumed) without your rows: its "
                   "leaves are guesses only they can check")
    else:
        figures["guesses_single_out"] = guesses_single_out
        effect += (f"; the stripped file's guesses still single out {guesses_single_out} of "
                   "your rows, so it audits HIGH too" if guesses_single_out else
                   "; the stripped file's guesses single out none of your rows")
    return Defence(_with_command("Release the trees without their leaf counts", path),
                   effect, figures, "measured on this model")


def release_command(inp: AuditInput) -> str | None:
    """The ``treeleaks release`` run that measures refitted models of the audited file, and
    the audit that then quotes it; None when release cannot refit the file's learner (a
    treeleaks JSON or XGBoost file, an estimator outside its grid)."""
    from treeleaks.defences.release_grid import RefitError, sklearn_learner

    if inp.estimator is not None:
        try:
            sklearn_learner(inp.estimator)
        except RefitError:
            return None
    elif Path(inp.path).suffix.lower() != ".txt":  # LightGBM's text keeps its parameters
        return None
    reader = _reader(Path(inp.path))
    trust = " --trust-pickle" if reader is not None and reader.runs_code else ""
    return (f"treeleaks release {inp.path} --data TRAIN.csv --label COLUMN --out release/"
            f"{trust}, then treeleaks audit {inp.path} --release release/{trust}")


def release_search(table: dict[str, Any]) -> Defence:
    """Releasing the refitted model the custodian's own ``treeleaks release`` run chose
    (``table``, its candidates.json), or the plain statement that none audits lower."""
    from treeleaks.report.release_table import advice

    measured = [c for c in table["candidates"] if c.get("level")]
    figures = {"candidates": len(measured), "none_lower": table["none_lower"],
               "original_level": table["original"]["level"], "chosen": table["chosen"]}
    return Defence("Release the refitted model `treeleaks release` chose",
                   f"{advice(table)} ({len(measured)} candidates measured)", figures,
                   "measured on your rows by treeleaks release")
