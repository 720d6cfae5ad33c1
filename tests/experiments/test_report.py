"""The HTML report renders in headless Chromium with every image loaded."""

import json
import re
import shutil
import subprocess

import pytest

from dpfair.experiments import build_report, get_spec, run_experiment


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


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
