"""MkDocs hook: the index of bench/results/, generated at build time.

A page holding the marker below gets, in its place, one line per committed result file:
the command that wrote it and the documentation pages that cite it. The command is read
from the file itself where the benchmark records it (``meta.argv``, or the ``args`` it
parsed); for files that do not record it, it is taken from ``WRITTEN_BY`` below, copied
from the page that reports the figures.
"""

from __future__ import annotations

import json
import posixpath
import shlex
import subprocess
from pathlib import Path

MARKER = "<!-- treeleaks-results-index -->"
ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"

# Result files that do not record their command: the command the page reporting them gives.
WRITTEN_BY = {
    "audit.json": "TREELEAKS_DATA=/work/shared/data python bench/audit.py",
    "audit_boosted.json": "python bench/audit.py --kinds lightgbm,xgboost,gb,hgb --seeds 1 "
    "--budget 30",
    "cancer_classes.json": "python bench/cancer_classes.py --seeds 3 --time-limit 15",
    "interpretable.json": "python bench/interpretable.py",
    "interpretable.png": "python bench/interpretable.py",
    "regression.json": "python bench/regression.py",
    "regression_smoke.json": "python bench/regression.py --smoke",
    "row_search.json": "python bench/row_search.py --datasets cancer --seeds 3 --time-limit 120",
    "row_search_more.json": "python bench/row_search.py --datasets "
    "wine,digits,onehot50:100,onehot100:100,onehot150:100 --seeds 1 --time-limit 30 "
    "--out bench/results/row_search_more.json",
    "singling_out.json": "TREELEAKS_DATA=/work/shared/data python bench/singling_out.py",
    "synthetic_adult.json": "python bench/synthetic.py",
    "synthetic_adult_white_box.json": "python bench/synthetic.py --white-box",
    "synthetic_adult_anonymeter.json": "python bench/synthetic.py --anonymeter-python PYTHON "
    "--out bench/results/synthetic_adult_anonymeter.json",
    "synthetic_adult_anonymeter.png": "python bench/synthetic.py --anonymeter-python PYTHON "
    "--out bench/results/synthetic_adult_anonymeter.json (the plot beside the JSON)",
    "synthetic_adult_grid.jsonl": "treeleaks sweep bench/grids/synthetic_adult.toml "
    "--out results/ --workers 1 (points.jsonl)",
    "synthetic_default_credit_grid.jsonl": "treeleaks sweep "
    "bench/grids/synthetic_default_credit.toml (points.jsonl)",
    "synthetic_default_credit_white_grid.jsonl": "treeleaks sweep "
    "bench/grids/synthetic_default_credit_white.toml --workers 1 (points.jsonl)",
    "dp_quick_seeds5-9.jsonl": "treeleaks sweep bench/grids/dp_quick_seeds5-9.toml (points.jsonl)",
}
SCRIPT_OF_ARGS = {"boosted": "bench/boosted.py", "strip": "bench/strip.py"}


def committed_results() -> list[str]:
    """The result files in git (smoke runs write ignored files beside them)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "bench/results"], cwd=ROOT, capture_output=True, text=True,
            check=True).stdout.split()
        names = [Path(p).name for p in listed if Path(p).parent == Path("bench/results")]
    except (OSError, subprocess.CalledProcessError):
        names = [p.name for p in RESULTS.iterdir() if p.is_file()]
    return sorted(names)


def _from_args(name: str, args: dict) -> str | None:
    script = next((s for prefix, s in SCRIPT_OF_ARGS.items() if name.startswith(prefix)), None)
    if script is None:
        return None
    words = ["python", script]
    for key, value in args.items():
        if key in ("data_dir", "smoke") or value in (None, "None", "False", False):
            continue
        if key == "out":
            value = f"bench/results/{Path(str(value)).name}"
        words += [f"--{key.replace('_', '-')}"] + ([] if value in ("True", True) else [str(value)])
    return shlex.join(words)


def command_of(name: str) -> str:
    if name in WRITTEN_BY:
        return WRITTEN_BY[name]
    if name.endswith(".json"):
        data = json.loads((RESULTS / name).read_text())
        argv = (data.get("meta") or {}).get("argv") if isinstance(data, dict) else None
        if argv:
            return shlex.join(["python", *argv])
        if isinstance(data, dict) and isinstance(data.get("args"), dict):
            command = _from_args(name, data["args"])
            if command:
                return command
    return "not recorded"


def citing_pages(name: str, files) -> list:
    """The documentation pages that mention the file by name."""
    pages = []
    for file in files.documentation_pages():
        if name in Path(file.abs_src_path).read_text(encoding="utf-8"):
            pages.append(file)
    return pages


def results_index(page, files) -> str:
    here = posixpath.dirname(page.file.src_uri)
    lines = ["| result file | written by | cited on |", "|---|---|---|"]
    for name in committed_results():
        cited = ", ".join(f"[{f.src_uri}]({posixpath.relpath(f.src_uri, here)})"
                          for f in citing_pages(name, files) if f.src_uri != page.file.src_uri)
        lines.append(f"| `{name}` | `{command_of(name)}` | {cited or 'none'} |")
    return "\n".join(lines)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, results_index(page, files))
