"""Wrong usages of the ``dpfair`` command: one line on stderr naming the path and the fix, exit 2, no traceback.

A newcomer's mistakes end in one line, never a traceback.  Each case runs the real command in a
subprocess, except the read-only folder, which needs the operating system's help: a folder that
really refuses writes (``/sys/fs`` on Linux, or ``chmod`` when not root), else a monkeypatched
``os.open`` in this process (root ignores permission bits).
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpfair.cli import app
from dpfair.experiments import ResultsStore

DPFAIR = [sys.executable, "-m", "dpfair.cli"]
RUN = ["run", "privacy-audit", "--quick", "--workers", "1", "--quiet"]


def dpfair(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "DPFAIR_EXPERIMENT_MODULES"}
    return subprocess.run([*DPFAIR, *args], env={**environ, **(env or {})}, cwd=cwd, capture_output=True, text=True, timeout=120)


def assert_one_line_error(res: subprocess.CompletedProcess[str] | object, *expected: str) -> str:
    """Exit 2, exactly one line on stderr, no traceback, and every expected fragment in that line."""
    stderr = res.stderr
    assert res.returncode == 2, (res.returncode, stderr)
    assert "Traceback" not in stderr and "[Errno" not in stderr, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    for fragment in expected:
        assert fragment in lines[0], (fragment, lines[0])
    assert "hint:" in lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def results_db(tmp_path_factory) -> Path:
    """A genuine results database (a quick run of a tiny experiment)."""
    folder = tmp_path_factory.mktemp("good")
    res = dpfair(*RUN, "--out", str(folder))
    assert res.returncode == 0, res.stderr
    return folder / "results.sqlite"


# --- DPFAIR_EXPERIMENT_MODULES -------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.parametrize("command", [["list"], RUN, ["report"]], ids=["list", "run", "report"])
def test_unknown_experiment_module(tmp_path, command, results_db):
    out = ["--out", str(results_db.parent)] if command[0] != "list" else []
    res = dpfair(*command, *out, env={"DPFAIR_EXPERIMENT_MODULES": "no.such.module"}, cwd=tmp_path)
    assert_one_line_error(res, "no.such.module", "DPFAIR_EXPERIMENT_MODULES")


@pytest.mark.slow
@pytest.mark.processes
def test_experiment_module_that_raises_on_import(tmp_path):
    (tmp_path / "broken_experiments.py").write_text("raise RuntimeError('boom\\nin two lines')\n")
    env = {"DPFAIR_EXPERIMENT_MODULES": "broken_experiments", "PYTHONPATH": str(tmp_path)}
    line = assert_one_line_error(dpfair("list", env=env, cwd=tmp_path), "broken_experiments", "boom", "DPFAIR_EXPERIMENT_MODULES")
    assert str(tmp_path / "broken_experiments.py") in line


# --- results.sqlite that is not a usable database ------------------------------------------------


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.parametrize("command", ["run", "report"])
def test_results_sqlite_is_a_directory(tmp_path, command):
    (tmp_path / "results.sqlite").mkdir()
    args = RUN if command == "run" else ["report"]
    assert_one_line_error(dpfair(*args, "--out", str(tmp_path)), str(tmp_path / "results.sqlite"), "folder", "--out")


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.parametrize("damage", ["not-a-database", "truncated"])
@pytest.mark.parametrize("command", ["run", "report"])
def test_damaged_results_sqlite_is_reported_and_left_alone(tmp_path, results_db, command, damage):
    db = tmp_path / "results.sqlite"
    data = b"these are my notes, not a database\n" * 40 if damage == "not-a-database" else results_db.read_bytes()[:20_000]
    db.write_bytes(data)
    args = RUN if command == "run" else ["report"]
    line = assert_one_line_error(dpfair(*args, "--out", str(tmp_path)), str(db), "move it aside", "--out")
    assert "corrupt or truncated" in line
    assert db.read_bytes() == data  # never overwritten
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.sqlite"]


# --- --out that cannot be used -------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.parametrize("command", ["run", "report"])
def test_out_is_an_existing_file(tmp_path, command):
    target = tmp_path / "notes.txt"
    target.write_text("hello")
    args = RUN if command == "run" else ["report"]
    assert_one_line_error(dpfair(*args, "--out", str(target)), str(target), "is a file", "not a folder")
    assert target.read_text() == "hello"


@pytest.mark.slow
@pytest.mark.processes
def test_out_below_a_file(tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("hello")
    assert_one_line_error(dpfair(*RUN, "--out", str(target / "results")), str(target), "is a file")


def _writes_blocked(folder: Path) -> bool:
    probe = folder / ".probe"
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_EXCL))
    except OSError:
        return True
    probe.unlink()
    return False


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.skipif(not Path("/sys/fs").is_dir(), reason="needs Linux sysfs (a folder that refuses writes, even to root)")
def test_run_into_a_system_read_only_folder():
    if not _writes_blocked(Path("/sys/fs")):
        pytest.skip("/sys/fs is writable here")
    assert_one_line_error(dpfair(*RUN, "--out", "/sys/fs"), "/sys/fs", "not writable")
    assert_one_line_error(dpfair(*RUN, "--out", "/sys/fs/dpfair-results"), "/sys/fs/dpfair-results", "cannot create")


@pytest.fixture
def read_only_results(tmp_path, results_db, monkeypatch):
    """A folder holding results that refuses every write: chmod, and (as root) a patched ``os.open``/``os.mkdir``."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    (folder / "results.sqlite").write_bytes(results_db.read_bytes())
    folder.chmod(0o555)
    if not _writes_blocked(folder):  # root: permission bits are not enforced; refuse writes the way the OS would
        real_open, real_mkdir = os.open, os.mkdir

        def inside(path) -> bool:
            return Path(os.fsdecode(path)).absolute().is_relative_to(folder)

        def guarded_open(path, flags, *args, **kwargs):
            if inside(path) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(path))
            return real_open(path, flags, *args, **kwargs)

        def guarded_mkdir(path, *args, **kwargs):
            if inside(path):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(path))
            return real_mkdir(path, *args, **kwargs)

        monkeypatch.setattr(os, "open", guarded_open)
        monkeypatch.setattr(os, "mkdir", guarded_mkdir)
        assert _writes_blocked(folder)
    yield folder
    folder.chmod(0o755)


@pytest.mark.processes
@pytest.mark.slow
@pytest.mark.parametrize("command", [RUN, ["report"]], ids=["run", "report"])
def test_read_only_out_folder(read_only_results, command):
    before = (read_only_results / "results.sqlite").read_bytes()
    res = CliRunner().invoke(app, [*command, "--out", str(read_only_results)])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert_one_line_error(_Result(res), str(read_only_results), "not writable", "--out")
    assert (read_only_results / "results.sqlite").read_bytes() == before


class _Result:
    """A CliRunner result seen like a finished subprocess."""

    def __init__(self, res) -> None:
        self.returncode = res.exit_code
        self.stderr = res.stderr


# --- --scheduler -----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.parametrize("address", ["bogus", "tcp://127.0.0.1", "http://127.0.0.1:8786", "tcp://127.0.0.1:99999"])
def test_bad_scheduler_address_fails_before_connecting(tmp_path, address):
    res = dpfair(*RUN, "--out", str(tmp_path / "out"), "--scheduler", address)
    assert_one_line_error(res, "--scheduler", address, "tcp://")
    assert not (tmp_path / "out").exists()


def test_the_results_store_refuses_a_damaged_database_in_python_too(tmp_path):
    from dpfair.experiments import ResultsStoreError

    (tmp_path / "results.sqlite").write_bytes(b"not sqlite" * 100)
    with pytest.raises(ResultsStoreError, match="corrupt or truncated") as info:
        ResultsStore(tmp_path)
    assert isinstance(info.value, OSError) and info.value.path == tmp_path / "results.sqlite"


# --- a corrupt data file -----------------------------------------------------------------

LAW = "law_school/bar_pass_prediction.csv"
SHARED = Path(os.environ.get("DPFAIR_DATA_HOME") or Path(__file__).resolve().parents[2] / "shared" / "data")


@pytest.fixture
def corrupt_home(tmp_path) -> Path:
    """A data home whose Law School file is truncated (the issue's `truncate -s 5000`)."""
    home = tmp_path / "data"
    (home / "law_school").mkdir(parents=True)
    source = SHARED / LAW
    data = source.read_bytes()[:5000] if source.is_file() else b"lsat,ugpa\n" * 500
    (home / LAW).write_bytes(data)
    return home


@pytest.mark.slow
@pytest.mark.processes
def test_list_marks_a_corrupt_dataset(corrupt_home, tmp_path):
    res = dpfair("list", "--out", str(tmp_path / "none"), env={"DPFAIR_DATA_HOME": str(corrupt_home)})
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    row = next(line for line in res.stdout.splitlines() if line.startswith("regression-law-envelopes "))
    assert "data corrupt" in row
    assert not (tmp_path / "none").exists()  # list only reads


@pytest.mark.slow
@pytest.mark.processes
def test_run_names_the_corrupt_file_its_sha256_and_the_fix(corrupt_home, tmp_path):
    from dpfair.datasets import REMOTE_FILES

    before = (corrupt_home / LAW).read_bytes()
    res = dpfair("run", "regression-law-envelopes", "--quick", "--quiet", "--out", str(tmp_path / "out"),
                 env={"DPFAIR_DATA_HOME": str(corrupt_home)})
    line = assert_one_line_error(res, str(corrupt_home / LAW), "corrupt", "dpfair data fetch law_school", "move it aside")
    assert REMOTE_FILES[LAW].sha256[0] in line
    assert (corrupt_home / LAW).read_bytes() == before


@pytest.mark.slow
@pytest.mark.processes
def test_data_fetch_on_a_corrupt_file_does_not_blame_the_network(corrupt_home):
    before = (corrupt_home / LAW).read_bytes()
    res = dpfair("data", "fetch", "law_school", env={"DPFAIR_DATA_HOME": str(corrupt_home)})
    line = assert_one_line_error(res, str(corrupt_home / LAW), "corrupt", "move it aside")
    assert "network" not in line.split("hint:")[0] and "check the network" not in line
    assert (corrupt_home / LAW).read_bytes() == before
    info = dpfair("data", "info", env={"DPFAIR_DATA_HOME": str(corrupt_home)})
    assert info.returncode == 0 and "CORRUPT" in info.stdout


def test_run_all_skips_what_cannot_run_runs_the_rest_and_summarizes(corrupt_home, tmp_path, monkeypatch):
    import dpfair.experiments as experiments

    specs = [experiments.get_spec("regression-law-envelopes"), experiments.get_spec("privacy-audit")]
    monkeypatch.setattr(experiments, "all_specs", lambda: specs)
    monkeypatch.setenv("DPFAIR_DATA_HOME", str(corrupt_home))
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["run", "all", "--quick", "--workers", "1", "--quiet", "--out", str(out)])
    assert res.exit_code == 2, (res.stdout, res.stderr, repr(res.exception))
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.stderr
    assert "[2/2] privacy-audit" in res.stdout and "ran 1 of 2 experiments" in res.stdout
    assert "[1/2] skipped regression-law-envelopes: data corrupt" in res.stderr
    assert "skipped 1 of 2 experiments" in res.stderr and str(corrupt_home / LAW) in res.stderr
    with ResultsStore(out) as store:
        assert set(store.results()["experiment"]) == {"privacy-audit"}


def test_run_all_with_only_missing_data_still_succeeds(tmp_path, monkeypatch):
    import dpfair.experiments as experiments

    specs = [experiments.get_spec("regression-law-envelopes"), experiments.get_spec("privacy-audit")]
    monkeypatch.setattr(experiments, "all_specs", lambda: specs)
    monkeypatch.setenv("DPFAIR_DATA_HOME", str(tmp_path / "empty"))
    res = CliRunner().invoke(app, ["run", "all", "--quick", "--workers", "1", "--quiet", "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.stderr
    assert "data missing: law_school/bar_pass_prediction.csv" in res.stderr


# --- usage, help, version, list -----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.processes
def test_no_arguments_prints_help_and_succeeds():
    for args in ([], ["data"]):
        res = dpfair(*args)
        assert res.returncode == 0 and "Usage: dpfair" in res.stdout and not res.stderr, res


@pytest.mark.slow
@pytest.mark.processes
def test_version():
    from dpfair import __version__

    res = dpfair("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"dpfair {__version__}"


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.parametrize("command", [[], ["run"], ["list"], ["report"], ["data"], ["data", "fetch"], ["data", "home"]])
def test_help_has_no_type_placeholders(command):
    res = dpfair(*command, "--help")
    assert res.returncode == 0 and "<bool>" not in res.stdout and "Raises" not in res.stdout, res.stdout


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["bogus"], "No such command"),
        (["run"], "Missing argument"),
        (["run", "privacy-audit", "--seeds", "many"], "--seeds"),
        (["run", "privacy-audit", "--no-such-option"], "--no-such-option"),
        (["data", "fetch", "adult", "extra"], "extra"),
        (["report", "--out"], "--out"),
    ],
)
def test_usage_errors_are_one_line(args, fragment):
    assert_one_line_error(dpfair(*args), fragment)


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.parametrize("address", ["bogus", "tcp://", "tcp://host:port"])
def test_scheduler_is_validated_for_run_all_too(tmp_path, address):
    res = dpfair("run", "all", "--quick", "--out", str(tmp_path / "out"), "--scheduler", address)
    assert_one_line_error(res, "--scheduler")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.processes
def test_list_aligns_long_ids_and_shows_measured_wall_times(results_db, tmp_path):
    res = dpfair("list", "--out", str(results_db.parent), env={"DPFAIR_DATA_HOME": str(tmp_path / "empty")})
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stdout.splitlines() if line and not line.startswith("QUICK")]
    column = lines[0].index("DATA")
    rows = lines[1:]
    assert any(len(line.split()[0]) > 28 for line in rows)
    for line in rows:
        assert line[column - 2 : column] == "  " and line[column] != " ", line
    audit = next(line for line in rows if line.startswith("privacy-audit "))
    assert re.search(r"\d+ s", audit), audit


@pytest.mark.slow
@pytest.mark.processes
def test_list_with_a_damaged_database_warns_once_and_lists(tmp_path):
    (tmp_path / "results.sqlite").write_bytes(b"not a database" * 100)
    res = dpfair("list", "--out", str(tmp_path))
    assert res.returncode == 0 and len(res.stderr.splitlines()) == 1 and "Traceback" not in res.stderr
    assert "privacy-audit" in res.stdout


# --- one data-home rule, saved in the environment ---------------------------------------


def test_saved_data_home_is_used_when_the_environment_variable_is_not_set(tmp_path, monkeypatch):
    from dpfair.datasets import _download

    setting = tmp_path / "etc" / "data-home"
    monkeypatch.setattr(_download, "saved_data_home_file", lambda: setting)
    monkeypatch.delenv("DPFAIR_DATA_HOME", raising=False)
    staged = tmp_path / "staged"
    staged.mkdir()
    res = CliRunner().invoke(app, ["data", "home", str(staged)])
    assert res.exit_code == 0 and str(staged) in res.stdout
    assert _download.get_data_home() == staged
    info = CliRunner().invoke(app, ["data", "info"])
    assert f"data home: {staged} (saved in {setting}" in info.stdout and "rule:" in info.stdout
    monkeypatch.setenv("DPFAIR_DATA_HOME", str(tmp_path / "env"))
    assert _download.get_data_home() == tmp_path / "env"  # the environment variable wins
    monkeypatch.delenv("DPFAIR_DATA_HOME")
    assert CliRunner().invoke(app, ["data", "home", "--forget"]).exit_code == 0
    assert not setting.exists() and _download.get_data_home().name == "dpfair"


@pytest.mark.parametrize("command", [[], ["list"], ["run"], ["report"], ["assess"], ["data"], ["data", "info"],
                                     ["data", "home"], ["data", "fetch"], ["federated"], ["federated", "demo"]])
def test_help_shows_no_escaped_brackets(command):
    # typer escapes "[default: ...]" and "[required]" for rich's HTML export even in the plain help: "\[required]"
    res = CliRunner().invoke(app, [*command, "--help"], terminal_width=100)
    assert res.exit_code == 0, res.output
    assert "\\[" not in res.output and "Usage:" in res.output, res.output
