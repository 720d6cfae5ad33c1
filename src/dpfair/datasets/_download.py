"""The data home and verified downloads.

Every real dataset file has an entry in :data:`REMOTE_FILES`: its path inside the data
home, its official upstream URL and the sha256 digests we accept.  A file is used only
after its digest matches.  Downloads go to a temporary file in the same folder and are
renamed into place only once complete and verified, so an interrupted or corrupted
download never leaves a file that looks valid.

The data home follows one rule, the same inside and outside ``make`` (:func:`get_data_home`):
``$DPFAIR_DATA_HOME`` if set; else the folder saved with ``dpfair data home PATH``
(:func:`save_data_home`; kept inside the virtual environment, so ``make`` can save the staged
copies once for every later ``dpfair`` command of that environment); else ``~/.cache/dpfair``
(or ``$XDG_CACHE_HOME/dpfair``).
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpfair._validation import check_int, check_nonnegative_finite, check_positive_finite

__all__ = [
    "DATASETS",
    "REMOTE_FILES",
    "DataIntegrityError",
    "DataUnavailableError",
    "RemoteFile",
    "data_home_source",
    "dataset_of_file",
    "dataset_paths",
    "fetch_file",
    "get_data_home",
    "save_data_home",
    "saved_data_home_file",
    "sha256_of",
]


class DataUnavailableError(RuntimeError):
    """A dataset file is missing and could not be downloaded (or ``download=False``).

    The message names the expected file, the data home and how to get the file.
    """


class DataIntegrityError(RuntimeError):
    """A dataset file's sha256 does not match any accepted digest, or a folder stands in its place.

    The file is never used, repaired or overwritten; the message names the file, its expected
    sha256 and the fix (move it aside, then ``dpfair data fetch NAME``).

    Parameters
    ----------
    message : str
        The whole message (what is wrong and the fix).
    path : path-like, optional
        The local file (or folder) concerned.
    expected : tuple of str, default ()
        The accepted sha256 digests.
    actual : str, optional
        The file's sha256 digest (None for a folder, or a refused download).
    fix : str, default ""
        The fix alone, for a one-line report.

    Attributes
    ----------
    path : pathlib.Path or None
        The local file (or folder) concerned.
    expected : tuple of str
        The accepted sha256 digests.
    actual : str or None
        The digest found.
    fix : str
        What to do about it.
    """

    def __init__(
        self,
        message: str,
        path: str | os.PathLike[str] | None = None,
        expected: tuple[str, ...] = (),
        actual: str | None = None,
        fix: str = "",
    ) -> None:
        super().__init__(message)
        self.path = Path(path) if path is not None else None
        self.expected = tuple(expected)
        self.actual = actual
        self.fix = fix

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return (type(self), (str(self), self.path, self.expected, self.actual, self.fix))


@dataclass(frozen=True)
class RemoteFile:
    """One file of a dataset: where it lives in the data home and where it comes from.

    Parameters
    ----------
    path : str
        Relative path inside the data home (for example ``"fico/totals.csv"``).
    url : str
        Official upstream URL.
    sha256 : tuple of str
        Accepted digests (some upstreams serve the same content with different line endings).
    """

    path: str
    url: str
    sha256: tuple[str, ...]


_FICO = "https://raw.githubusercontent.com/fairmlbook/fairmlbook.github.io/eb8a58b0a5b39c73803565e32ab4695ebed33702/code/creditscore/data/"
_GERRYFAIR = "https://raw.githubusercontent.com/algowatchpenn/GerryFair/e007abe5e9409b87de6189a92ce71d6b2fb21bb6/dataset/"
_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/"
_SDNIST = (
    "https://raw.githubusercontent.com/usnistgov/SDNist/76b74a1ed2725f35980b786b8f00764117cd9bdb/BenchmarkData/ACSDataExcerpts/"
)

#: Every real dataset file, keyed by its path inside the data home.
REMOTE_FILES: dict[str, RemoteFile] = {
    f.path: f
    for f in [
        RemoteFile(
            "communities_crime/uci/communities.data",
            _UCI + "communities/communities.data",
            (
                "09e0b5c07eae24c1efab19b2edee05e160e7f5743b6f31e31eec3d73624da2ea",  # CRLF copy
                "d90d85bd66bad9a00fa0ed6c15ac017b5966d528e55ba2940ad028d071353f95",  # LF (as UCI serves it)
            ),
        ),
        RemoteFile(
            "communities_crime/uci/communities.names",
            _UCI + "communities/communities.names",
            ("80914f24ab37261fb0fbda7e417cad8001335dadda4a8d702c265601ef8434fc",),
        ),
        RemoteFile(
            "communities_crime/gerryfair/communities.csv",
            _GERRYFAIR + "communities.csv",
            ("babba5f97ea1e25f88b5b244af3a855f23fe04a474d826b3159b5f321bf31c62",),
        ),
        RemoteFile(
            "law_school/bar_pass_prediction.csv",
            "https://storage.googleapis.com/lawschool_dataset/bar_pass_prediction.csv",
            ("76ebfdb0427ce8db038d53fa5943180ac77096bffb8264f000ed21e9f0ec82f2",),
        ),
        RemoteFile(
            "fico/transrisk_cdf_by_race_ssa.csv",
            _FICO + "transrisk_cdf_by_race_ssa.csv",
            ("04c9691aa4b9fad43cc9722bc35a7d3f3f02ae1d724d49ae9d3bbe153f5b4f67",),
        ),
        RemoteFile(
            "fico/transrisk_performance_by_race_ssa.csv",
            _FICO + "transrisk_performance_by_race_ssa.csv",
            ("77af654ac4173978c3cdb3a9186becb12ec35666d9e34e5b666a6a3972692ff9",),
        ),
        RemoteFile(
            "fico/totals.csv",
            _FICO + "totals.csv",
            ("60ba4af53f9e61dedad3a5c4246390e666760e7552c98b08084dd3abf6b73f13",),
        ),
        RemoteFile(
            "adult/adult.data",
            _UCI + "adult/adult.data",
            ("5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",),
        ),
        RemoteFile(
            "adult/adult.test",
            _UCI + "adult/adult.test",
            ("a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",),
        ),
        RemoteFile(
            "acs_nist_excerpts/ma2019.csv",
            _SDNIST + "massachusetts/ma2019.csv",
            ("5489f7d45bccad8ae591dfe9011638def521b3f8641edf169bb45fea2c62fb44",),
        ),
        RemoteFile(
            "acs_nist_excerpts/tx2019.csv",
            _SDNIST + "texas/tx2019.csv",
            ("0dab7a8b745232c622d7d3bc0b7fdeaf7f8ecdb3a5653a73fd2867f5f116ed96",),
        ),
        RemoteFile(
            "acs_nist_excerpts/national2019.csv",
            _SDNIST + "national/national2019.csv",
            ("9e039c8e47c9e998d60f66fd50ec620fc2d0703decdc21f3069c9844fbef979b",),
        ),
    ]
}

#: Files each named dataset needs (the names used by ``dpfair data fetch NAME``).
DATASETS: dict[str, tuple[str, ...]] = {
    "communities": (
        "communities_crime/uci/communities.data",
        "communities_crime/uci/communities.names",
        "communities_crime/gerryfair/communities.csv",
    ),
    "law_school": ("law_school/bar_pass_prediction.csv",),
    "fico": ("fico/transrisk_cdf_by_race_ssa.csv", "fico/transrisk_performance_by_race_ssa.csv", "fico/totals.csv"),
    "adult": ("adult/adult.data", "adult/adult.test"),
    "acs": ("acs_nist_excerpts/ma2019.csv", "acs_nist_excerpts/tx2019.csv", "acs_nist_excerpts/national2019.csv"),
}


def saved_data_home_file() -> Path:
    """The file in which ``dpfair data home PATH`` saves the data home.

    Inside a virtual environment it is ``<environment>/etc/dpfair/data-home``, so every
    ``dpfair`` command of that environment (``make demo``, ``.venv/bin/dpfair``, an activated
    ``.venv``) sees the same data; outside one, ``$XDG_CONFIG_HOME/dpfair/data-home`` (or
    ``~/.config/dpfair/data-home``).

    Returns
    -------
    pathlib.Path
        The file's path (it need not exist).
    """
    if sys.prefix != sys.base_prefix:
        return Path(sys.prefix) / "etc" / "dpfair" / "data-home"
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(config) / "dpfair" / "data-home"


def _saved_data_home() -> Path | None:
    try:
        text = saved_data_home_file().read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return Path(text).expanduser() if text and "\x00" not in text else None


def save_data_home(data_home: str | os.PathLike[str] | None) -> Path | None:
    """Save (or, with None, forget) the data home used when ``$DPFAIR_DATA_HOME`` is not set.

    Parameters
    ----------
    data_home : str or path-like or None
        The folder (made absolute; it need not exist yet), or None to remove the saved one.

    Returns
    -------
    pathlib.Path or None
        The saved folder, or None after forgetting it.

    Raises
    ------
    TypeError
        If ``data_home`` is not a path or None.
    OSError
        If the file of :func:`saved_data_home_file` cannot be written.
    """
    target = saved_data_home_file()
    if data_home is None:
        target.unlink(missing_ok=True)
        return None
    folder = get_data_home(data_home).absolute()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(f"{folder}\n", encoding="utf-8")
    tmp.replace(target)
    return folder


def data_home_source() -> tuple[Path, str]:
    """The data home and, in words, which part of the rule chose it.

    Returns
    -------
    path : pathlib.Path
        As :func:`get_data_home` returns it.
    source : str
        ``"$DPFAIR_DATA_HOME"``, ``"saved in <file>"`` or ``"default"``.
    """
    if os.environ.get("DPFAIR_DATA_HOME"):
        return get_data_home(), "$DPFAIR_DATA_HOME"
    saved = _saved_data_home()
    if saved is not None:
        return saved, f"saved in {saved_data_home_file()} by `dpfair data home`"
    return get_data_home(), "default"


def get_data_home(data_home: str | os.PathLike[str] | None = None) -> Path:
    """Folder holding the datasets: the argument, else ``$DPFAIR_DATA_HOME``, else the saved one, else a cache.

    Parameters
    ----------
    data_home : str or path-like, optional
        Explicit data home; ``~`` is expanded.

    Returns
    -------
    pathlib.Path
        ``data_home``, else ``$DPFAIR_DATA_HOME``, else the folder saved by
        ``dpfair data home PATH`` (:func:`save_data_home`), else ``$XDG_CACHE_HOME/dpfair``
        or ``~/.cache/dpfair``.  The folder need not exist.

    Raises
    ------
    TypeError
        If ``data_home`` is not None, a string or a path-like object.
    ValueError
        If ``data_home`` contains a NUL character.
    """
    if data_home is not None:
        if not isinstance(data_home, str | os.PathLike):
            raise TypeError(f"data_home must be a folder path (str or path-like) or None, got {type(data_home).__name__}.")
        text = os.fspath(data_home)
        if isinstance(text, bytes):
            raise TypeError("data_home must be a str path, not bytes; decode it first.")
        if "\x00" in text:
            raise ValueError("data_home contains a NUL character; pass a valid folder path.")
        return Path(text).expanduser()
    env = os.environ.get("DPFAIR_DATA_HOME")
    if env:
        return Path(env).expanduser()
    saved = _saved_data_home()
    if saved is not None:
        return saved
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "dpfair"


def sha256_of(path: Path) -> str:
    """Hex sha256 digest of a file.

    Parameters
    ----------
    path : pathlib.Path
        The file.

    Returns
    -------
    str
        64 hexadecimal digits.
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def dataset_of_file(path: str) -> str | None:
    """The dataset name (a key of :data:`DATASETS`) that a data-home file belongs to.

    Parameters
    ----------
    path : str
        A key of :data:`REMOTE_FILES` (the file's path inside the data home).

    Returns
    -------
    str or None
        The dataset's name, or None for a file of no dataset.
    """
    return next((name for name, paths in DATASETS.items() if path in paths), None)


def _corrupt_fix(remote: RemoteFile, target: Path) -> str:
    name = dataset_of_file(remote.path)
    command = f"dpfair data fetch {name}" if name else "dpfair data fetch"
    return (
        f"move it aside or delete it (dpfair never overwrites it), then run `{command}` (needs the network) "
        f"or copy a verified file to {target}."
    )


def _help(remote: RemoteFile, home: Path) -> str:
    return (
        f"expected file {home / remote.path} (from {remote.url}); the data home is {home} "
        "(set DPFAIR_DATA_HOME to a folder that holds it, or run `dpfair data fetch`)."
    )


def _verified_local(remote: RemoteFile, target: Path, home: Path) -> Path:
    """``target`` when it is a file with an accepted sha256 digest; otherwise the error that says why and the fix."""
    if not target.is_file():
        fix = _corrupt_fix(remote, target)
        raise DataIntegrityError(
            f"{target} is a folder (or another non-file), not the dataset file; {fix} {_help(remote, home)}",
            target,
            remote.sha256,
            None,
            fix,
        )
    try:
        digest = sha256_of(target)
    except OSError as exc:
        raise DataUnavailableError(f"cannot read {target} ({exc.strerror or exc}). {_help(remote, home)}") from None
    if digest not in remote.sha256:
        fix = _corrupt_fix(remote, target)
        raise DataIntegrityError(
            f"{target} is corrupt: its sha256 is {digest}, expected {' or '.join(remote.sha256)} "
            f"(the file from {remote.url}); {fix}",
            target,
            remote.sha256,
            digest,
            fix,
        )
    return target


def _download_once(remote: RemoteFile, target: Path, home: Path, timeout: float) -> Path:
    """One download attempt into a temporary file beside ``target``, hashed as it streams; it replaces ``target``
    atomically only when complete and verified, and is removed otherwise (an OSError or URLError is for the caller
    to retry; a wrong digest raises DataIntegrityError, never retried)."""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        h = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(remote.url, timeout=timeout) as resp:
            expected_len = resp.headers.get("Content-Length")
            received = 0
            for block in iter(lambda: resp.read(1 << 16), b""):
                out.write(block)
                h.update(block)
                received += len(block)
            out.flush()
            os.fsync(out.fileno())
        if expected_len is not None and received != int(expected_len):
            raise OSError(f"truncated download: {received} of {expected_len} bytes")
        digest = h.hexdigest()
        if digest not in remote.sha256:
            fix = "try again later; if it persists, the upstream file changed: report it to dpfair."
            raise DataIntegrityError(
                f"downloaded {remote.url} has sha256 {digest}, expected one of {list(remote.sha256)}; "
                f"nothing was written. {_help(remote, home)}",
                target,
                remote.sha256,
                digest,
                fix,
            )
        os.replace(tmp, target)  # atomic: the file appears only complete and verified
        return target
    finally:
        tmp.unlink(missing_ok=True)


def fetch_file(
    remote: RemoteFile,
    data_home: str | os.PathLike[str] | None = None,
    *,
    download: bool = True,
    retries: int = 3,
    backoff: float = 1.0,
    timeout: float = 60.0,
) -> Path:
    """Return the verified local path of ``remote``, downloading it if it is missing.

    Parameters
    ----------
    remote : RemoteFile
        The file to get.
    data_home : path, optional
        Overrides :func:`get_data_home`.
    download : bool, default True
        If False, a missing file raises instead of being downloaded.
    retries : int, default 3
        Attempts after the first failure; the wait doubles each time, from ``backoff`` seconds.
    backoff : float, default 1.0
        Seconds to wait before the first retry (finite, >= 0).
    timeout : float, default 60.0
        Socket timeout per attempt, in seconds (finite, > 0).

    Returns
    -------
    pathlib.Path
        The local path of the verified file.

    Raises
    ------
    TypeError
        If ``remote`` is not a :class:`RemoteFile`, or another argument has the wrong type.
    ValueError
        If ``retries``, ``backoff`` or ``timeout`` is out of range.
    DataUnavailableError
        The file is missing and could not be downloaded.
    DataIntegrityError
        The local or downloaded file does not have an accepted sha256 digest, or a folder
        stands where the file should be.
    """
    if not isinstance(remote, RemoteFile):
        raise TypeError(f"remote must be a RemoteFile (see REMOTE_FILES), got {type(remote).__name__}.")
    if not isinstance(download, bool | np.bool_):
        raise TypeError(f"download must be True or False, got {type(download).__name__}.")
    retries = check_int(retries, "retries", minimum=0)
    backoff = check_nonnegative_finite(backoff, "backoff")
    timeout = check_positive_finite(timeout, "timeout")
    home = get_data_home(data_home)
    target = home / remote.path
    if target.exists():
        return _verified_local(remote, target, home)
    if not download:
        raise DataUnavailableError(f"dataset file missing: {_help(remote, home)}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataUnavailableError(
            f"cannot create the folder {target.parent} for the download ({exc.strerror or exc}). {_help(remote, home)}"
        ) from None
    last_error: Exception | None = None
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff * 2 ** (attempt - 1))
        try:
            return _download_once(remote, target, home, timeout)
        except DataIntegrityError:
            raise
        except (OSError, urllib.error.URLError) as exc:  # includes HTTP errors, timeouts, truncation
            last_error = exc
    raise DataUnavailableError(f"could not download after {retries + 1} attempts ({last_error}); {_help(remote, home)}")


def dataset_paths(name: str, data_home: str | os.PathLike[str] | None = None, *, download: bool = True) -> dict[str, Path]:
    """Verified local paths of every file of dataset ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`DATASETS`.
    data_home : str or path-like, optional
        Overrides :func:`get_data_home`.
    download : bool, default True
        If False, a missing file raises instead of being downloaded.

    Returns
    -------
    dict of str to pathlib.Path
        Each file's path inside the data home (as in :data:`DATASETS`) mapped to its
        verified local path.

    Raises
    ------
    TypeError
        If ``name`` is not a string, or ``data_home`` or ``download`` has the wrong type.
    ValueError
        If ``name`` is not a known dataset.
    DataUnavailableError
        A file is missing and could not be downloaded.
    DataIntegrityError
        A file does not have an accepted sha256 digest.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a dataset name (str), got {type(name).__name__}; choose one of {sorted(DATASETS)}.")
    if name not in DATASETS:
        raise ValueError(f"unknown dataset name {name!r}; choose one of {sorted(DATASETS)}.")
    return {p: fetch_file(REMOTE_FILES[p], data_home, download=download) for p in DATASETS[name]}
