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


def test_make_test_prints_the_slowest_tests():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "DURATIONS := --durations=25" in makefile
    for target in ("test:", "test-quick:"):
        recipe = makefile.split(f"\n{target}", 1)[1].split("\n\n", 1)[0]
        assert all("$(DURATIONS)" in line for line in recipe.splitlines()[1:] if "PYTEST" in line or "PARALLEL" in line)


def test_the_readme_tree_names_every_subpackage_and_points_to_the_architecture_page():
    from dpfair import _layout

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tree = readme.split("## Architecture", 1)[1].split("```", 2)[1]
    missing = [name for name in _layout.subpackages() if f"  {name}/" not in tree]
    assert not missing, f"add to the README's architecture tree: {missing}"
    assert "docs/architecture.rst" in readme and "shared/design" not in readme


#: Registered private classes (those that release something) with no row in docs/user_guide/protections.rst yet
#: (each fails the test below once it has one: delete it here then).  A new class gets its row with its code
#: (CONTRIBUTING, the checklist).
NO_ROW_YET: set[str] = set()


def test_every_registered_private_class_says_what_it_protects():
    import re

    from _registry import BUILDING_BLOCKS, NOT_ESTIMATORS, registered_names

    page = (ROOT / "docs/user_guide/protections.rst").read_text(encoding="utf-8")
    names = registered_names() - NOT_ESTIMATORS - BUILDING_BLOCKS  # every registered class that releases something
    rowless = sorted(n for n in names - NO_ROW_YET if not re.search(rf"~dpfair\.[\w.]*\b{n}`", page))
    assert not rowless, f"add a row to docs/user_guide/protections.rst for: {rowless}"
    filled = sorted(n for n in NO_ROW_YET & names if re.search(rf"~dpfair\.[\w.]*\b{n}`", page))
    assert not filled, f"these have a row now: delete them from NO_ROW_YET: {filled}"


def test_test_modules_have_unique_basenames():
    """The test folders are not packages, so pytest imports each file by its base name: two files of one name in
    different folders stop the whole run with "import file mismatch" (a suite that only ever ran file by file would
    not see it)."""
    seen: dict[str, Path] = {}
    clashes = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if path.name in seen:
            clashes.append(f"{seen[path.name].relative_to(ROOT)} and {path.relative_to(ROOT)}")
        seen.setdefault(path.name, path)
    assert not clashes, f"rename one of each pair: {clashes}"
