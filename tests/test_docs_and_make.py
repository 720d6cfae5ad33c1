"""Docs and Makefile without rough edges: no 'will join as they land', inherited result methods, make bench."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_docs_no_longer_promise_settings_that_have_landed():
    for page in ("docs/index.rst", "docs/user_guide/index.rst", "docs/getting_started.rst"):
        assert "as they land" not in (ROOT / page).read_text(encoding="utf-8"), page


def test_result_classes_document_the_methods_they_inherit():
    template = (ROOT / "docs/_templates/autosummary/class.rst").read_text(encoding="utf-8")
    assert 'objname.endswith("Result")' in template and ":inherited-members:" in template
    from dpfair.bandits import BanditResult, SimulationResult

    for name in ("final", "plot", "curve"):
        assert getattr(BanditResult, name) is getattr(SimulationResult, name)  # inherited: the template shows them


def test_make_bench_saves_the_data_home_first():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    bench = next(line for line in makefile.splitlines() if line.startswith("bench:"))
    assert "data-home" in bench  # it failed with a traceback where make demo had not run
    assert "bench_federated_secure.py" in makefile
