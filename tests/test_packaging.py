"""Packaging: the wheel and sdist that ``python -m build`` makes, installed into a fresh environment.

Slow (a build, a fresh virtual environment and a dependency install from the package index, about
a minute), so it is not part of the default test run: ``make package-check`` runs it (with
``DPFAIR_PACKAGE_CHECK=1``), and so does ``.ci/run``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import venv
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import dpfair

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "requirements" / "constraints.txt"
EXAMPLE = ROOT / "examples" / "plot_getting_started.py"

pytestmark = pytest.mark.skipif(
    os.environ.get("DPFAIR_PACKAGE_CHECK") != "1",
    reason="builds and installs the package into a fresh environment (about a minute): run `make package-check`",
)


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(args, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{' '.join(map(str, args))} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """``python -m build``: the sdist, then the wheel built from it."""
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)])
    wheels = sorted(out.glob("dpfair-*.whl"))
    sdists = sorted(out.glob("dpfair-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in out.iterdir())
    return {"wheel": wheels[0], "sdist": sdists[0]}


@pytest.fixture(scope="module")
def fresh_env(dist, tmp_path_factory) -> Path:
    """A new virtual environment with only the wheel and its dependencies (pinned), no extras."""
    env_dir = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    _run([*pip, "-c", str(CONSTRAINTS), str(dist["wheel"])])
    return env_dir


def _source_files() -> set[str]:
    """The package's Python files, relative to ``src/``."""
    src = ROOT / "src"
    return {p.relative_to(src).as_posix() for p in (src / "dpfair").rglob("*.py") if "__pycache__" not in p.parts}


def test_wheel_holds_the_package_and_no_tests(dist):
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        names = set(wheel.namelist())
    missing = _source_files() - names
    assert not missing, f"the wheel lacks {sorted(missing)}"
    top_level = {name.split("/")[0] for name in names}
    assert top_level == {"dpfair", f"dpfair-{dpfair.__version__}.dist-info"}, top_level
    assert not [n for n in names if "/tests/" in f"/{n}" or n.startswith("tests/") or "conftest" in n]
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_wheel_version_is_the_single_sourced_version(dist):
    assert dist["wheel"].name.startswith(f"dpfair-{dpfair.__version__}-"), dist["wheel"].name
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        metadata = Parser().parsestr(wheel.read(f"dpfair-{dpfair.__version__}.dist-info/METADATA").decode())
        entry_points = wheel.read(f"dpfair-{dpfair.__version__}.dist-info/entry_points.txt").decode()
    assert metadata["Name"] == "dpfair"
    assert metadata["Version"] == dpfair.__version__
    assert "dpfair = dpfair.cli:main" in entry_points
    extras = set(metadata.get_all("Provides-Extra") or [])
    assert {"test", "docs"} <= extras, extras


def test_sdist_holds_what_a_build_and_the_tests_need(dist):
    prefix = f"dpfair-{dpfair.__version__}/"
    with tarfile.open(dist["sdist"]) as sdist:
        names = {name.removeprefix(prefix) for name in sdist.getnames()}
    needed = {"pyproject.toml", "README.md", "requirements/constraints.txt"}
    needed |= {"examples/README.rst", "examples/plot_getting_started.py"}
    needed |= {f"src/{name}" for name in _source_files()}
    needed |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("*.py") if "__pycache__" not in p.parts}
    missing = needed - names
    assert not missing, f"the sdist lacks {sorted(missing)}"
    unwanted = [n for n in names if n.split("/")[0] in {".venv", "results", "dist", "build"} or "__pycache__" in n]
    unwanted += [n for n in names if n.startswith(("docs/_build", "docs/auto_examples", "docs/api/generated"))]
    assert not unwanted, f"the sdist holds build output: {sorted(unwanted)[:10]}"


@pytest.mark.slow
@pytest.mark.processes
def test_installed_wheel_runs_without_the_test_extras(fresh_env, tmp_path):
    python, dpfair_cmd = fresh_env / "bin" / "python", fresh_env / "bin" / "dpfair"
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONNOUSERSITE": "1"}
    env.pop("PYTHONPATH", None)
    # run outside the checkout, so only the installed package can be imported
    help_text = _run([str(dpfair_cmd), "--help"], cwd=tmp_path, env=env).stdout
    assert "run" in help_text and "report" in help_text
    probe = (
        "import dpfair, importlib.util as u; "
        "print(dpfair.__version__); print(dpfair.__file__); print(u.find_spec('pytest') is None)"
    )
    version, location, no_pytest = _run([str(python), "-c", probe], cwd=tmp_path, env=env).stdout.split()
    assert version == dpfair.__version__
    assert Path(location).resolve().is_relative_to(fresh_env.resolve()), location
    assert no_pytest == "True", "the plain install pulled in the test extra"
    _run([str(python), str(EXAMPLE)], cwd=tmp_path, env=env)
