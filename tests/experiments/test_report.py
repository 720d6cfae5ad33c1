"""The HTML report renders in headless Chromium with every image loaded; its overview gives verdicts."""

import json
import re
import shutil
import subprocess

import pandas as pd
import pytest

from dpfair.experiments import all_specs, build_report, get_spec, run_experiment
from dpfair.experiments.report import verdict_for


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.mark.slow
@pytest.mark.processes
def test_report_has_every_figure_and_it_loads_in_a_browser(tmp_path):
    run_experiment(get_spec("privacy-audit"), tmp_path, quick=True, progress=False)
    index = build_report(tmp_path)
    text = index.read_text()
    images = re.findall(r"<img src='([^']+)'", text)
    assert images and all((index.parent / src).stat().st_size > 1000 for src in images)
    assert "privacy-audit" in text and "Audit lower bound" in text
    browser = chromium()
    if browser is None:
        pytest.skip("Chromium is not installed (Debian package 'chromium'; .ci/run installs it when it can)")
    probe = index.parent / "probe.html"
    probe.write_text(
        text.replace(
            "</body>",
            "<script>window.addEventListener('load',()=>{document.body.setAttribute('data-widths',"
            "JSON.stringify([...document.images].map(i=>i.naturalWidth)))});</script></body>",
        )
    )
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'chrome-profile'}", "--virtual-time-budget=5000", "--dump-dom"]
    dom = subprocess.run([browser, *flags, probe.as_uri()], capture_output=True, text=True, timeout=120).stdout
    match = re.search(r'data-widths="([^"]*)"', dom)
    assert match, dom[:2000]
    widths = json.loads(match.group(1).replace("&quot;", '"'))
    assert len(widths) == len(images) and all(w > 0 for w in widths)


def _selection_rows(case, values):
    rows = []
    for m, metrics in values.items():
        experiment = f"selection-{case}-table"
        rows += [{"experiment": experiment, "case": case, "m": m, "metric": k, "value": v} for k, v in metrics.items()]
    return pd.DataFrame(rows)


def _paper_values(case):
    from dpfair.experiments import PaperValue
    from dpfair.experiments.selection import PAPER_LIMITS, PAPER_MEAN_R, PAPER_TABLE_1

    out = {}
    for m in (1, 2, 3, 4):
        eps, t_o, t_inf, red = (PaperValue(v, "Table 1").value for v in PAPER_TABLE_1[case][m])
        out[m] = {"epsilon_o": eps, "theta_epsilon_o": t_o, "theta_inf": t_inf,
                  "accuracy_reduction": red, "limit_A0": PAPER_LIMITS[case][m][0],
                  "limit_A1": PAPER_LIMITS[case][m][1], "mean_R_A0": PAPER_MEAN_R[case][0], "mean_R_A1": PAPER_MEAN_R[case][1]}
    return out


def test_verdict_matches_the_printed_numbers_and_quotes_them_when_it_differs():
    spec = get_spec("selection-synthetic-table")
    values = _paper_values("synthetic")
    assert verdict_for(spec, _selection_rows("synthetic", values)).status == "matches"
    values[4]["accuracy_reduction"] = 0.30
    verdict = verdict_for(spec, _selection_rows("synthetic", values))
    assert verdict.status == "differs" and "30.00%, printed 44.66%" in verdict.detail  # quoted as printed


def test_overview_gives_every_experiment_a_verdict_and_says_which_data_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("DPFAIR_DATA_HOME", str(tmp_path / "no-data"))
    run_experiment(get_spec("privacy-audit"), tmp_path, quick=True, progress=False)
    text = build_report(tmp_path).read_text()
    assert "<b>Seeded noise.</b>" in text[: text.index("<h2 id='overview'>")]  # said before any number
    overview = text[text.index("<table class='overview'>") : text.index("</table>", text.index("<table class='overview'>"))]
    rows = overview.split("<tr>")[2:]
    assert len(rows) == len(all_specs())
    audit = next(r for r in rows if "#privacy-audit'" in r)
    assert ">quick<" in audit and "2 of 10 seeds" in audit and "matches" in audit
    law = next(r for r in rows if "#regression-law-envelopes'" in r)
    assert "not run" in law and "data missing: law_school/bar_pass_prediction.csv" in law
    assert "Not run yet" not in text
