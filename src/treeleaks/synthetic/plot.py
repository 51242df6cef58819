"""The privacy-utility trade-off as a PNG, ε on the horizontal: above, the attack's success
rate with its 95% interval beside the baseline |X|/|D| (and, where they ran, the worst
case on the custodian's own rows and anonymeter's risk, with their intervals); below, the
releases' utility (mean Jensen-Shannon distance, and the train-on-synthetic AUC on a
second axis when measured), mean ± sd over releases. Drawn on matplotlib's Agg canvas (no
pyplot, no display needed)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from treeleaks.synthetic.singling_out import SyntheticSinglingOut

# epsilon, success_rate, ci_low, ci_high, baseline, the utility's figures and, when it ran,
# anonymeter's (its JSON)
Point = dict[str, Any]


def point(result: SyntheticSinglingOut, utility: dict[str, Any],
          anonymeter: dict[str, Any] | None = None) -> Point:
    """One run's figures as the plot reads them."""
    low, high = result.ci
    return {"epsilon": result.epsilon, "success_rate": result.success_rate, "ci_low": low,
            "ci_high": high, "baseline": result.baseline, "white_box": result.white_box,
            **{k: utility.get(k) for k in ("js_distance_mean", "js_distance_mean_sd",
                                           "auc_synthetic", "auc_synthetic_sd")},
            "anonymeter": anonymeter,
            "worst_case": None if result.worst_case is None else result.worst_case.summary()}


def success_png(result: SyntheticSinglingOut, utility: dict[str, Any],
                anonymeter: dict[str, Any] | None = None) -> bytes:
    """One run: its point on both panels."""
    kind = "white box" if result.white_box else "black box"
    return tradeoff_png([point(result, utility, anonymeter)], f"PrivBayes ({kind}), |X| = "
                        f"{result.n_private}, |D| = {result.n_population}")


def tradeoff_png(points: Sequence[Point], title: str) -> bytes:
    """Points of one dataset over ε (a line per attack, black and white box)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.0, 6.0), layout="constrained")
    FigureCanvasAgg(figure)
    top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    _attacks(top, points)
    _worst_case(top, points)
    _anonymeter(top, points)
    baseline = points[0]["baseline"]
    top.axhline(baseline, linestyle="--", color="grey",
                label=f"baseline |X|/|D| = {baseline:.2f}")
    top.set_ylim(0, 1)
    top.set_ylabel("singling out (95% interval)")
    top.set_title(title)
    top.legend(loc="upper left", fontsize="small")
    _utility(bottom, sorted({p["epsilon"]: p for p in points}.values(),
                            key=lambda p: p["epsilon"]))
    bottom.set_xscale("log")
    bottom.set_xlabel("privacy budget ε")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def _attacks(ax: Any, points: Sequence[Point]) -> None:
    """The attack's success rate on the study's targets with its 95% interval, a line per
    kind (black and white box)."""
    for white in sorted({bool(p.get("white_box")) for p in points}):
        rows = sorted((p for p in points if bool(p.get("white_box")) == white),
                      key=lambda p: p["epsilon"])
        rates = [p["success_rate"] for p in rows]
        ax.errorbar([p["epsilon"] for p in rows], rates,
                    yerr=[[r - p["ci_low"] for r, p in zip(rates, rows)],
                          [p["ci_high"] - r for r, p in zip(rates, rows)]],
                    fmt="o-", capsize=4,
                    label=f"{'white' if white else 'black'}-box attack, the study's targets")


def _worst_case(ax: Any, points: Sequence[Point]) -> None:
    """The attack aimed at the custodian's own rows, with its 95% interval, where it ran."""
    rows = sorted((p for p in points if p.get("worst_case")), key=lambda p: p["epsilon"])
    if not rows:
        return
    rates = [p["worst_case"]["success_rate"] for p in rows]
    # drawn a little to the left, so a rate equal to the study targets' does not hide it
    ax.errorbar([p["epsilon"] / 1.12 for p in rows], rates,
                yerr=[[r - p["worst_case"]["ci"][0] for r, p in zip(rates, rows)],
                      [p["worst_case"]["ci"][1] - r for r, p in zip(rates, rows)]],
                fmt="v--", capsize=4, color="tab:orange",
                label="worst case: the attack on your own rows")


def _anonymeter(ax: Any, points: Sequence[Point]) -> None:
    """anonymeter's risk with its 95% interval, where it ran."""
    rows = sorted((p for p in points if "risk" in (p.get("anonymeter") or {})),
                  key=lambda p: p["epsilon"])
    if not rows:
        return
    risks = [p["anonymeter"]["risk"] for p in rows]
    # drawn a little to the right, so a risk equal to the attack's rate does not hide it
    ax.errorbar([p["epsilon"] * 1.12 for p in rows], risks,
                yerr=[[r - p["anonymeter"]["ci"][0] for r, p in zip(risks, rows)],
                      [p["anonymeter"]["ci"][1] - r for r, p in zip(risks, rows)]],
                fmt="D:", capsize=4, color="tab:red",
                label="anonymeter's singling-out risk (one release)")


def _utility(ax: Any, rows: list[Point]) -> None:
    """Mean JS distance (left axis) and, when measured, the AUC (right axis), ± sd."""
    eps = [p["epsilon"] for p in rows]
    ax.errorbar(eps, [p["js_distance_mean"] for p in rows],
                yerr=[p.get("js_distance_mean_sd") or 0 for p in rows], fmt="s-", capsize=3,
                color="tab:green", label="mean JS distance")
    ax.set_ylim(bottom=0)
    ax.set_ylabel("mean JS distance (0 = same)", color="tab:green")
    measured = [p for p in rows if p.get("auc_synthetic") is not None]
    if measured:
        _auc(ax, measured)


def _auc(ax: Any, measured: list[Point]) -> None:
    """The train-on-synthetic AUC ± sd on a second axis, at the ε where it was measured."""
    twin = ax.twinx()
    twin.errorbar([p["epsilon"] for p in measured], [p["auc_synthetic"] for p in measured],
                  yerr=[p.get("auc_synthetic_sd") or 0 for p in measured], fmt="^-",
                  capsize=3, color="tab:purple", label="AUC trained on the release")
    twin.set_ylim(0.3, 1)
    twin.set_ylabel("AUC trained on synthetic", color="tab:purple")
