"""Loaders for the real datasets the papers use.

Each loader reads verified files from the data home (see :mod:`dpfair.datasets._download`),
downloading them from the official upstream when missing (``download=True``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpfair._validation import check_bool
from dpfair.datasets._download import dataset_paths

__all__ = ["Dataset", "FicoData", "load_acs_excerpt", "load_adult", "load_communities", "load_fico", "load_law_school"]

PathLike = str | os.PathLike[str] | None


@dataclass
class Dataset:
    """A tabular dataset with a target and a sensitive attribute.

    Parameters
    ----------
    X : pandas.DataFrame
        Features (the sensitive attribute is not among them unless stated).
    y : pandas.Series
        Target (real-valued for regression, 0/1 for classification).
    sensitive : pandas.Series
        Sensitive attribute (group label of each row).
    name : str
        Dataset and variant.
    description : str
        How the rows, target and groups were derived.
    extra : dict, optional
        Further columns or facts (for example the train/test split of Adult).
    """

    X: pd.DataFrame
    y: pd.Series
    sensitive: pd.Series
    name: str
    description: str
    extra: dict[str, Any] = field(default_factory=dict)


def _attribute_names(names_path: Any) -> list[str]:
    with open(names_path, encoding="latin-1") as fh:
        text = fh.read()
    return re.findall(r"^@attribute\s+(\S+)", text, flags=re.MULTILINE)


def _files(dataset: str, data_home: PathLike, download: Any) -> dict[str, Path]:
    """The checked paths of ``dataset``'s files (after checking ``download``): :func:`dataset_paths`."""
    check_bool(download, "download")
    return dataset_paths(dataset, data_home, download=download)


def _check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        shown = repr(value) if isinstance(value, str) else f"a {type(value).__name__}"
        error = ValueError if isinstance(value, str) else TypeError
        raise error(f"{name} must be one of {list(choices)}, got {shown}.")
    return value


def load_communities(variant: str = "uci", *, data_home: PathLike = None, download: bool = True) -> Dataset:
    """Load the Communities and Crime data set (UCI; Redmond 2009).

    Parameters
    ----------
    variant : {"uci", "kearns"}
        ``"uci"``: the regression variant of Xian et al. (2024): identifier columns
        (state, county, community, communityname, fold) and every column with a missing
        value are dropped, leaving 99 features; target ``ViolentCrimesPerPop`` in [0, 1];
        group 1 when ``racepctblack > 0.06`` (970 communities) else 0 (1,024).
        ``"kearns"``: the classification variant of Kearns et al. (2018) used by Jagielski
        et al. (2019): GerryFair's processed file (missing values set to 0), label 1 when
        ``ViolentCrimesPerPop`` is above its 70th percentile (583 positives); sensitive
        attribute 1 when ``racepctblack`` is above its median (0.06), which is removed from
        the 121 remaining features.
    data_home : str or path-like, optional
        Folder holding the files (default: :func:`~dpfair.datasets.get_data_home`).
    download : bool, default True
        Download missing files from the official upstream (needs the network); with
        False a missing file raises :class:`~dpfair.datasets.DataUnavailableError`.

    Returns
    -------
    Dataset
        1,994 communities.

    Raises
    ------
    ValueError
        If ``variant`` is not ``"uci"`` or ``"kearns"``.
    TypeError
        If an argument has the wrong type.
    DataUnavailableError
        A file is missing (and could not be downloaded).
    DataIntegrityError
        A file in the data home is not the published one (sha256 mismatch, or a folder).
    """
    _check_choice(variant, "variant", ("uci", "kearns"))
    files = _files("communities", data_home, download)
    if variant == "uci":
        names = _attribute_names(files["communities_crime/uci/communities.names"])
        raw = pd.read_csv(files["communities_crime/uci/communities.data"], header=None, names=names, na_values="?")
        frame = raw.drop(columns=["state", "county", "community", "communityname", "fold"])
        frame = frame.dropna(axis=1, how="any")
        y = frame.pop("ViolentCrimesPerPop")
        sensitive = (frame["racepctblack"] > 0.06).astype(int).rename("racepctblack>0.06")
        return Dataset(
            X=frame,
            y=y,
            sensitive=sensitive,
            name="communities-uci",
            description="UCI Communities & Crime, columns with missing values dropped; target ViolentCrimesPerPop; "
            "group 1 iff racepctblack > 0.06.",
            extra={"fold": raw["fold"]},
        )
    if variant == "kearns":
        frame = pd.read_csv(files["communities_crime/gerryfair/communities.csv"], index_col=0)
        y = frame.pop("ViolentCrimesPerPop").astype(int)
        black = frame.pop("racepctblack")
        sensitive = (black > black.median()).astype(int).rename("racepctblack>median")
        return Dataset(
            X=frame,
            y=y,
            sensitive=sensitive,
            name="communities-kearns",
            description="GerryFair processed Communities & Crime (missing values -> 0); label ViolentCrimesPerPop above "
            "its 70th percentile; sensitive racepctblack above its median (removed from X).",
            extra={"racepctblack": black},
        )
    raise AssertionError("unreachable")  # pragma: no cover


LAW_GROUPS = ("asian", "black", "hisp", "white")


def load_law_school(*, data_home: PathLike = None, download: bool = True) -> Dataset:
    """LSAC Law School (Google's ``bar_pass_prediction.csv``), as in Xian et al. (2024).

    Rows whose ``race1`` is asian, black, hisp or white: 21,983 rows (897, 1,343, 1,027 and
    18,716).  Target ``ugpa`` with declared bounds [1, 4].  ``X`` holds ``lsat``, ``male``
    (NaN for the 5 rows without gender), ``pass_bar`` and ``dnn_bar_pass_prediction``.

    Parameters
    ----------
    data_home : str or path-like, optional
        Folder holding the files (default: :func:`~dpfair.datasets.get_data_home`).
    download : bool, default True
        Download missing files from the official upstream (needs the network); with
        False a missing file raises :class:`~dpfair.datasets.DataUnavailableError`.

    Returns
    -------
    Dataset
        ``extra["target_bounds"]`` holds the declared bounds (1.0, 4.0).

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    DataUnavailableError
        A file is missing (and could not be downloaded).
    DataIntegrityError
        A file in the data home is not the published one (sha256 mismatch, or a folder).
    """
    path = _files("law_school", data_home, download)["law_school/bar_pass_prediction.csv"]
    raw = pd.read_csv(path, index_col=0, na_values="?")
    frame = raw[raw["race1"].isin(LAW_GROUPS)].reset_index(drop=True)
    X = pd.DataFrame(
        {
            "lsat": frame["lsat"].astype(float),
            "male": frame["gender"].map({"male": 1.0, "female": 0.0}),
            "pass_bar": frame["pass_bar"].astype(float),
            "dnn_bar_pass_prediction": frame["dnn_bar_pass_prediction"].astype(float),
        }
    )
    return Dataset(
        X=X,
        y=frame["ugpa"].astype(float).rename("ugpa"),
        sensitive=frame["race1"].astype(str).rename("race"),
        name="law_school",
        description="LSAC bar passage study; rows with race1 in {asian, black, hisp, white}; target ugpa in [1, 4].",
        extra={"target_bounds": (1.0, 4.0)},
    )


@dataclass
class FicoData:
    """FICO TransRisk aggregates (Hardt, Price & Srebro 2016).

    Parameters
    ----------
    scores : ndarray
        Score grid divided by 100 (198 points in [0, 1]).
    groups : list of str
        ``["white", "black", "hispanic", "asian"]``.
    pmf : pandas.DataFrame
        ``P(score | group)`` (rows: score grid, columns: groups), from CDF differences.
    non_default : pandas.DataFrame
        ``P(Y = 1 | score, group)`` with Y = non-default = 1 - default rate.
    totals : pandas.Series
        People per group in the sample.
    """

    scores: np.ndarray
    groups: list[str]
    pmf: pd.DataFrame
    non_default: pd.DataFrame
    totals: pd.Series


_FICO_COLUMNS = {"Non- Hispanic white": "white", "Black": "black", "Hispanic": "hispanic", "Asian": "asian"}


def load_fico(*, data_home: PathLike = None, download: bool = True) -> FicoData:
    """FICO scores by race: score PMFs, non-default rates and group totals.

    Parameters
    ----------
    data_home : str or path-like, optional
        Folder holding the files (default: :func:`~dpfair.datasets.get_data_home`).
    download : bool, default True
        Download missing files from the official upstream (needs the network); with
        False a missing file raises :class:`~dpfair.datasets.DataUnavailableError`.

    Returns
    -------
    FicoData
        Score grid, per-group PMFs, non-default rates and totals.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    DataUnavailableError
        A file is missing (and could not be downloaded).
    DataIntegrityError
        A file in the data home is not the published one (sha256 mismatch, or a folder).
    """
    files = _files("fico", data_home, download)
    cdf = pd.read_csv(files["fico/transrisk_cdf_by_race_ssa.csv"]).rename(columns=_FICO_COLUMNS)
    perf = pd.read_csv(files["fico/transrisk_performance_by_race_ssa.csv"]).rename(columns=_FICO_COLUMNS)
    totals = pd.read_csv(files["fico/totals.csv"]).rename(columns=_FICO_COLUMNS)
    groups = list(_FICO_COLUMNS.values())
    scores = cdf["Score"].to_numpy(float) / 100.0
    cdf_values = cdf[groups].to_numpy(float) / 100.0
    pmf = np.diff(np.vstack([np.zeros(len(groups)), cdf_values]), axis=0)
    pmf = np.clip(pmf, 0.0, None)  # the published CDFs are rounded to 0.01 %; a few steps are flat
    pmf /= pmf.sum(axis=0, keepdims=True)
    index = pd.Index(scores, name="score")
    return FicoData(
        scores=scores,
        groups=groups,
        pmf=pd.DataFrame(pmf, index=index, columns=groups),
        non_default=pd.DataFrame(1.0 - perf[groups].to_numpy(float) / 100.0, index=index, columns=groups),
        totals=totals.iloc[0][groups].astype(int),
    )


_ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation", "relationship",
    "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country", "income",
]  # fmt: skip


def load_adult(*, drop_missing: bool = True, data_home: PathLike = None, download: bool = True) -> Dataset:
    """UCI Adult, train and test concatenated (``extra["split"]`` says which).

    Label: income > 50K.  Sensitive attribute: ``sex``.  With ``drop_missing`` the rows
    with a ``?`` are dropped (45,222 rows remain).  ``fnlwgt`` and ``education`` (encoded by
    ``education-num``) are removed from ``X``.

    Parameters
    ----------
    drop_missing : bool, default True
        Drop the rows with a missing value.
    data_home : str or path-like, optional
        Folder holding the files (default: :func:`~dpfair.datasets.get_data_home`).
    download : bool, default True
        Download missing files from the official upstream (needs the network); with
        False a missing file raises :class:`~dpfair.datasets.DataUnavailableError`.

    Returns
    -------
    Dataset
        Label ``income>50K`` in {0, 1}; ``extra["split"]`` is ``"train"`` or ``"test"``.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    DataUnavailableError
        A file is missing (and could not be downloaded).
    DataIntegrityError
        A file in the data home is not the published one (sha256 mismatch, or a folder).
    """
    check_bool(drop_missing, "drop_missing")
    files = _files("adult", data_home, download)
    parts = []
    for split, key, skip in (("train", "adult/adult.data", 0), ("test", "adult/adult.test", 1)):
        part = pd.read_csv(files[key], header=None, names=_ADULT_COLUMNS, skipinitialspace=True, skiprows=skip, na_values="?")
        part = part.dropna(how="all")
        part["split"] = split
        parts.append(part)
    frame = pd.concat(parts, ignore_index=True)
    if drop_missing:
        frame = frame.dropna().reset_index(drop=True)
    y = frame["income"].str.rstrip(".").eq(">50K").astype(int).rename("income>50K")
    X = frame.drop(columns=["income", "fnlwgt", "education", "split", "sex"])
    return Dataset(
        X=X,
        y=y,
        sensitive=frame["sex"].rename("sex"),
        name="adult",
        description="UCI Adult (train + test); label income > 50K; sensitive attribute sex.",
        extra={"split": frame["split"]},
    )


_ACS_REGIONS = {
    "ma": "acs_nist_excerpts/ma2019.csv",
    "tx": "acs_nist_excerpts/tx2019.csv",
    "national": "acs_nist_excerpts/national2019.csv",
}
_RACE_GROUPS = {1: "white", 2: "black", 6: "asian"}


def load_acs_excerpt(region: str = "national", *, data_home: PathLike = None, download: bool = True) -> Dataset:
    """NIST 2019 ACS person-level excerpts as an ACSIncome-like task.

    Rows with ``AGEP > 16``, known ``PINCP > 100`` and ``PWGTP >= 1`` (the ACSIncome filters
    that these excerpts allow; they lack ``WKHP``).  Label ``PINCP > 50,000``.  Sensitive
    attribute: race in four groups (white, black, asian, other) from ``RAC1P``.  Features:
    age, sex, marital status, education, industry category, density and the disability
    flags, with ``N`` read as missing.

    Parameters
    ----------
    region : {"ma", "tx", "national"}, default "national"
        Which excerpt: Massachusetts, Texas or the national sample.
    data_home : str or path-like, optional
        Folder holding the files (default: :func:`~dpfair.datasets.get_data_home`).
    download : bool, default True
        Download missing files from the official upstream (needs the network); with
        False a missing file raises :class:`~dpfair.datasets.DataUnavailableError`.

    Returns
    -------
    Dataset
        Label ``PINCP>50000`` in {0, 1}; ``extra`` holds ``PINCP`` and ``RAC1P``.

    Raises
    ------
    ValueError
        If ``region`` is not one of the three excerpts.
    TypeError
        If an argument has the wrong type.
    DataUnavailableError
        A file is missing (and could not be downloaded).
    DataIntegrityError
        A file in the data home is not the published one (sha256 mismatch, or a folder).
    """
    _check_choice(region, "region", tuple(sorted(_ACS_REGIONS)))
    path = _files("acs", data_home, download)[_ACS_REGIONS[region]]
    raw = pd.read_csv(path, na_values="N", dtype={"PUMA": str})
    keep = (raw["AGEP"] > 16) & (raw["PINCP"] > 100) & (raw["PWGTP"] >= 1)
    frame = raw[keep].reset_index(drop=True)
    features = ["AGEP", "SEX", "MSP", "EDU", "INDP_CAT", "DENSITY", "DREM", "DPHY", "DEYE", "DEAR"]
    race = frame["RAC1P"].map(_RACE_GROUPS).fillna("other").rename("race")
    return Dataset(
        X=frame[features].astype(float),
        y=(frame["PINCP"] > 50_000).astype(int).rename("PINCP>50000"),
        sensitive=race,
        name=f"acs-{region}",
        description="NIST ACS 2019 excerpt, ACSIncome-like filters and label; race in 4 groups.",
        extra={"PINCP": frame["PINCP"], "RAC1P": frame["RAC1P"]},
    )
