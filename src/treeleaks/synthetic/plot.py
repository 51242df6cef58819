"""The attack's outcome as a PNG: the success rate with its 95% interval beside the
baseline |X|/|D|. Drawn on matplotlib's Agg canvas (no pyplot, no display needed)."""

from __future__ import annotations

import io

from treeleaks.synthetic.singling_out import SyntheticSinglingOut


def success_png(result: SyntheticSinglingOut) -> bytes:
    """One point with its interval at the run's ε, and the baseline as a dashed line."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(4.8, 3.2), layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    low, high = result.ci
    rate = result.success_rate
    ax.errorbar([result.epsilon], [rate], yerr=[[rate - low], [high - rate]], fmt="o",
                capsize=4, label=f"attack ({result.successes}/{result.attacks})")
    ax.axhline(result.baseline, linestyle="--", color="grey",
               label=f"baseline |X|/|D| = {result.baseline:.2f}")
    ax.set_xscale("log")
    ax.set_ylim(0, 1)
    ax.set_xlabel("privacy budget ε")
    ax.set_ylabel("singling-out success rate")
    kind = "white box" if result.white_box else "black box"
    ax.set_title(f"PrivBayes ({kind}), |X| = {result.n_private}, |D| = {result.n_population}")
    ax.legend(loc="upper left", fontsize="small")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()
