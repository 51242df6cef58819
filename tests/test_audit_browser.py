"""The HTML report in a real browser: headless Chromium loads it, runs its script, shows the
verdict, the tables and the pictures, and prints it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

from treeleaks import from_sklearn
from treeleaks.report.collect import run_audit
from treeleaks.report.evidence import AuditInput
from treeleaks.report.html_report import render

from conftest import binary_frame

CHROMIUM = next((found for name in ("chromium", "chromium-browser", "google-chrome")
                 if (found := shutil.which(name))), None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium; "
    ".ci/run installs it when apt is available), so the HTML report was not opened in a "
    "browser")
HIGH_RED = np.array([0xC6, 0x28, 0x28]) / 255  # the HIGH risk badge


def chromium(page: Path, profile: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={profile}", *flags, page.as_uri()],
        capture_output=True, text=True, timeout=120, check=True)


@pytest.fixture(scope="module", params=["forest", "tree"])
def page(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
         ) -> tuple[Path, int, str]:
    X, y = binary_frame(60, 6, seed=9)
    estimator = (RandomForestClassifier(n_estimators=10, bootstrap=False, random_state=0)
                 if request.param == "forest" else DecisionTreeClassifier(random_state=0))
    estimator.fit(X, y)
    audit = run_audit(AuditInput(from_sklearn(estimator), f"{request.param}.skops", None,
                                 estimator, X.assign(label=y), "label", None, 60.0))
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(render(audit), encoding="utf-8")
    return path, len(X), request.param


def test_the_page_loads_runs_its_script_and_shows_everything(page, tmp_path) -> None:
    path, n_rows, kind = page
    dom = chromium(path, tmp_path / "profile", "--dump-dom").stdout
    assert 'data-sort-ready="yes"' in dom  # the inline script ran without an error
    assert 'id="verdict"' in dom and 'class="risk HIGH"' in dom
    start = dom.index('id="row-table"')
    table = dom[start:dom.index("</table>", start)]
    assert table.count("<tr>") == n_rows + 1  # the header and every row
    plots = {"forest": ("plot-exposure", "plot-error"), "tree": ("plot-entropy", "plot-tree")}
    for plot in plots[kind]:
        assert f'id="{plot}"><img' in dom
    assert dom.count('src="data:image/png;base64,') == len(plots[kind])


def test_the_page_looks_right_and_prints(page, tmp_path) -> None:
    path, _, _ = page
    shot, pdf = tmp_path / "shot.png", tmp_path / "report.pdf"
    chromium(path, tmp_path / "profile", "--window-size=1200,900", "--hide-scrollbars",
             f"--screenshot={shot}")
    pixels = imread(shot)[..., :3]
    assert pixels.std() > 0.05  # not a blank page
    badge = np.abs(pixels - HIGH_RED).max(axis=2) < 0.03
    assert badge.sum() > 500  # the red HIGH badge is on the first screen
    chromium(path, tmp_path / "profile", "--no-pdf-header-footer", f"--print-to-pdf={pdf}")
    assert pdf.read_bytes().startswith(b"%PDF") and pdf.stat().st_size > 20_000
