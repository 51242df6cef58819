"""The stripped R model predicted by R itself, beside the original, when ``Rscript`` is
installed: both files loaded with ``readRDS`` in a child R process and their predictions
(an rpart's classes and fractions or means, a randomForest's classes and votes or means, a
ranger's predictions) compared exactly on the same inputs (a factor column read with the
model's own levels), each prediction after the same ``set.seed`` (both forests break tied
votes at random)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pandas as pd

from treeleaks.defences.strip_check import StripCheckError

R_SECONDS = 120  # the child R process's time; a check that takes longer is not made
PACKAGES = {"rpart": "rpart", "randomForest": "randomForest", "ranger": "ranger"}
_SCRIPT = r"""
args <- commandArgs(TRUE)
X <- read.csv(args[3], check.names = FALSE)
original <- readRDS(args[1])
if (inherits(original, "train")) suppressPackageStartupMessages(library(caret))
model <- if (inherits(original, "train")) original$finalModel else original
levels_of <- if (!is.null(model$forest$xlevels)) model$forest$xlevels else
  if (!is.null(model$forest$covariate.levels)) model$forest$covariate.levels else
  attr(model, "xlevels")
for (v in intersect(names(levels_of), names(X))) {
  if (is.character(levels_of[[v]])) X[[v]] <- factor(as.character(X[[v]]), levels_of[[v]])
}
outputs <- function(m) {
  set.seed(0)
  if (inherits(m, "train")) return(list(predict(m, X), predict(m, X, type = "prob")))
  if (inherits(m, "ranger")) return(list(predict(m, X)$predictions))
  if (inherits(m, "randomForest")) {
    out <- list(predict(m, X))
    if (m$type == "classification") {
      set.seed(0)
      out <- c(out, list(predict(m, X, type = "prob")))
    }
    return(out)
  }
  out <- list(predict(m, X))
  if (m$method == "class") out <- c(out, list(predict(m, X, type = "class")))
  out
}
suppressPackageStartupMessages(library(args[4], character.only = TRUE))
same <- identical(outputs(original), outputs(readRDS(args[2])))
cat(if (same) "same" else "different")
"""


def check_in_r(original: Path, stripped: bytes, r_class: str, rows: pd.DataFrame) -> str:
    """Compare the two files' predictions in R on ``rows`` (the model's columns); the line
    saying how it went ("" when Rscript is missing or R took too long; R's last word when it
    stopped, such as a package it lacks). `StripCheckError` when they differ."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        return ""
    with tempfile.TemporaryDirectory() as folder:
        here = Path(folder)
        (here / "stripped.rds").write_bytes(stripped)
        (here / "check.R").write_text(_SCRIPT)
        rows.to_csv(here / "rows.csv", index=False)
        try:
            done = subprocess.run(
                [rscript, "--vanilla", str(here / "check.R"), str(original.resolve()),
                 str(here / "stripped.rds"), str(here / "rows.csv"), PACKAGES[r_class]],
                capture_output=True, text=True, timeout=R_SECONDS, check=False)
        except subprocess.TimeoutExpired:
            return ""
    if done.stdout.strip() == "different":
        raise StripCheckError(f"R predicts differently with the stripped file on {len(rows):,} "
                              "inputs; nothing was written")
    if done.stdout.strip() == "same":
        return f"identical in R on {len(rows):,} inputs"
    said = (done.stderr.strip().splitlines() or ["no word"])[-1]
    return f"not predicted in R (R stopped: {said})"
