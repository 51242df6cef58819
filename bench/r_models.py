"""Benchmark: R models with their defaults, read without R and audited (issue 52).

R (``Rscript`` with MASS, randomForest and rpart) fits, on MASS's Pima table (Pima.tr and
Pima.te, 532 rows), a default ``randomForest`` (500 trees), the same with
``keep.inbag=TRUE``, a default ``rpart`` and a fully grown one, and saves each with
``saveRDS``; treeleaks then reads each without R. Printed per model: trees and leaves, the
seconds to read it, the fields stored row by row, whether the stored labels (``y``) are the
table's and (rpart) whether routing the table gives the stored leaves (``where``), the exact
reconstruction (rpart: status, verified, rows, seconds) and the audit's level and rule, with
the table as ``--data`` (rows singled out by the guesses).

    python bench/r_models.py            # about 1 min; skips when Rscript is missing
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from common import BENCH_DIR, environment, saved_in_r, write_json

OUT = BENCH_DIR / "results" / "r_models.json"
MODELS = {
    "randomForest default": "randomForest(type ~ ., data = pima)",
    "randomForest keep.inbag": "randomForest(type ~ ., data = pima, keep.inbag = TRUE)",
    "rpart default": "rpart(type ~ ., data = pima)",
    "rpart full": "rpart(type ~ ., data = pima, control = rpart.control(cp = 0, minsplit = 2, "
                  "minbucket = 1))",
}


def make(folder: Path) -> dict[str, Path]:
    """Fit and save every model with R in ``folder``; the table as ``pima.csv``."""
    setup = ["suppressPackageStartupMessages({library(MASS); library(randomForest); "
             "library(rpart)})", "pima <- rbind(MASS::Pima.tr, MASS::Pima.te)",
             "write.csv(pima, 'pima.csv', row.names = FALSE)",
             "writeLines(c(R.version.string, paste('randomForest', packageVersion("
             "'randomForest')), paste('rpart', packageVersion('rpart'))), 'versions.txt')"]
    return saved_in_r(folder, setup, MODELS)


def measure(name: str, path: Path, data: pd.DataFrame) -> dict[str, Any]:
    """One model read, reconstructed where it has counts, and audited with the table."""
    from treeleaks import reconstruct
    from treeleaks.frontends.r_models import read_r_model
    from treeleaks.report.collect import run_audit
    from treeleaks.report.evidence import AuditInput

    start = time.perf_counter()
    read = read_r_model(path)
    model = read.model
    out: dict[str, Any] = {
        "model": name, "file_kb": round(path.stat().st_size / 1024), "trees": model.n_trees,
        "leaves": model.n_leaves, "read_s": round(time.perf_counter() - start, 3),
        "per_row": [f.name for f in model.described().fields if f.per_row],
        "y_is_the_labels": bool(np.array_equal(np.array(model.classes)[read.rows["y"]],
                                               data["type"]))}
    if "where" in read.rows:
        leaves = model.apply(data[model.feature_names].to_numpy(float))[:, 0]
        out["where_is_routing"] = bool(np.array_equal(leaves, read.rows["where"]))
        start = time.perf_counter()
        summary = reconstruct(model, time_limit=60).summary()
        out["reconstruct"] = {"status": str(summary["status"]),
                              "verified": summary["verified"], "rows": summary["n_rows"],
                              "seconds": round(time.perf_counter() - start, 3)}
    start = time.perf_counter()
    audit = run_audit(AuditInput(model, str(path), data=data, label="type", total_budget=60.0))
    out["audit"] = {"level": audit.risk["level"], "rule": audit.risk["rule"],
                    "rows_singled_out": audit.verdict["rows_singled_out"],
                    "seconds": round(time.perf_counter() - start, 2)}
    return out


def main() -> int:
    if shutil.which("Rscript") is None:
        print("skipped: Rscript is missing (Debian: r-base-core r-cran-randomforest "
              "r-cran-rpart)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        files = make(Path(tmp))
        data = pd.read_csv(Path(tmp) / "pima.csv")
        rows = [measure(name, path, data) for name, path in files.items()]
        versions = (Path(tmp) / "versions.txt").read_text().splitlines()
    for row in rows:
        recon = row.get("reconstruct")
        print(f"{row['model']:24} {row['trees']:4} trees {row['leaves']:6} leaves "
              f"{row['file_kb']:4} KB read {row['read_s']:.2f} s; row by row "
              f"{', '.join(row['per_row'])}; y = labels {row['y_is_the_labels']}"
              + (f"; where = routing {row['where_is_routing']}; reconstruct "
                 f"{recon['status']} verified {recon['verified']} {recon['rows']} rows "
                 f"{recon['seconds']:.2f} s" if recon else "")
              + f"; audit {row['audit']['level']} ({row['audit']['rule']}), "
              f"{row['audit']['rows_singled_out']} rows singled out, "
              f"{row['audit']['seconds']:.1f} s")
    write_json(OUT, {"environment": environment(), "r": versions, "rows": rows})
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
