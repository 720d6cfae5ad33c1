"""Published schemas of the real data sets: what a private pipeline may declare without reading a row.

A private model's guarantee depends on everything it is given being public: the levels an encoder gives columns
to, the fill values of an imputer, the ranges a scaler divides by.  Read off the training rows
(``sorted(X[c].unique())``, a ``StandardScaler``), each is a statistic of private data outside any budget (a
level held by one person adds a column).  A :class:`TableSchema` holds them as the data set's documentation
publishes them, for :mod:`dpfair.preprocessing`'s declared transformers
(:class:`~dpfair.preprocessing.DeclaredOneHotEncoder`, :class:`~dpfair.preprocessing.DeclaredImputer`,
:class:`~dpfair.preprocessing.DeclaredRangeScaler`).

:data:`ADULT_SCHEMA` describes the columns :func:`~dpfair.datasets.load_adult` returns; ``tests/datasets``
checks it against the published files, so that it cannot drift from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = ["ADULT_SCHEMA", "TableSchema", "adult_schema"]


@dataclass(frozen=True)
class TableSchema:
    """The public description of a table: each categorical column's levels and each numeric column's range.

    Parameters
    ----------
    name : str
        The data set.
    categories : mapping of str to tuple
        Each categorical column's levels, in the order the documentation lists them; ``None`` is the level of a
        missing value, listed where the published files hold missing values in that column.
    ranges : mapping of str to (float, float)
        Each numeric column's documented ``(low, high)``: every value of the published files lies within it.
    source : str
        Where the levels and ranges are published.

    Examples
    --------
    >>> from dpfair.datasets import ADULT_SCHEMA
    >>> ADULT_SCHEMA.categories["race"]
    ('White', 'Asian-Pac-Islander', 'Amer-Indian-Eskimo', 'Other', 'Black')
    >>> ADULT_SCHEMA.ranges["age"]
    (17.0, 90.0)
    >>> ADULT_SCHEMA.encoder_categories(["race"])
    {'race': ['White', 'Asian-Pac-Islander', 'Amer-Indian-Eskimo', 'Other', 'Black']}
    """

    name: str
    categories: Mapping[str, tuple[Any, ...]]
    ranges: Mapping[str, tuple[float, float]]
    source: str

    def __post_init__(self) -> None:  # read-only views: a shared constant cannot be edited by one caller
        object.__setattr__(self, "categories", MappingProxyType({k: tuple(v) for k, v in self.categories.items()}))
        object.__setattr__(self, "ranges", MappingProxyType({k: (float(lo), float(hi)) for k, (lo, hi)
                                                             in self.ranges.items()}))

    def encoder_categories(self, columns: list[str] | None = None, *, missing: bool = True) -> dict[str, list[Any]]:
        """``{column: levels}`` for :class:`~dpfair.preprocessing.DeclaredOneHotEncoder` (a fresh dict of lists).

        Parameters
        ----------
        columns : list of str or None, default None
            The categorical columns wanted (``None``: all of them, in the schema's order).
        missing : bool, default True
            Keep the ``None`` level (a column of its own for a missing value); ``False`` for a table whose rows
            with missing values were dropped.

        Returns
        -------
        dict
            Each column's levels.

        Raises
        ------
        KeyError
            If a column is not a categorical column of the schema (the message names it).
        """
        columns = list(self.categories) if columns is None else list(columns)
        unknown = [c for c in columns if c not in self.categories]
        if unknown:
            raise KeyError(f"{unknown} are not categorical columns of the {self.name} schema: "
                           f"{list(self.categories)}.")
        return {c: [level for level in self.categories[c] if missing or level is not None] for c in columns}


#: Adult's 41 native countries, in the order ``adult.names`` lists them.
_ADULT_COUNTRIES = (
    "United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany", "Outlying-US(Guam-USVI-etc)",
    "India", "Japan", "Greece", "South", "China", "Cuba", "Iran", "Honduras", "Philippines", "Italy", "Poland",
    "Jamaica", "Vietnam", "Mexico", "Portugal", "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador",
    "Taiwan", "Haiti", "Columbia", "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand", "Yugoslavia",
    "El-Salvador", "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands",
)

#: UCI Adult as :func:`~dpfair.datasets.load_adult` returns it (``X``'s columns, and ``sex``, the sensitive
#: attribute): the levels ``adult.names`` lists (its spellings, ``Trinadad&Tobago`` included), ``None`` where the
#: files write ``?`` (workclass, occupation, native-country); the numeric columns' ranges in the published files
#: (capital gain's 99999 is the census top code).
ADULT_SCHEMA = TableSchema(
    name="adult",
    categories={
        "workclass": ("Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov",
                      "Without-pay", "Never-worked", None),
        "marital-status": ("Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
                           "Married-spouse-absent", "Married-AF-spouse"),
        "occupation": ("Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial", "Prof-specialty",
                       "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical", "Farming-fishing", "Transport-moving",
                       "Priv-house-serv", "Protective-serv", "Armed-Forces", None),
        "relationship": ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"),
        "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
        "sex": ("Female", "Male"),
        "native-country": (*_ADULT_COUNTRIES, None),
    },
    ranges={"age": (17, 90), "education-num": (1, 16), "capital-gain": (0, 99999), "capital-loss": (0, 4356),
            "hours-per-week": (1, 99)},
    source="UCI Machine Learning Repository, Adult, adult.names (Kohavi and Becker, 1996)",
)


def adult_schema() -> TableSchema:
    """The published schema of UCI Adult (:data:`ADULT_SCHEMA`).

    Returns
    -------
    TableSchema
        The levels of every categorical column of :func:`~dpfair.datasets.load_adult` (``None`` for a missing
        value where the files have one) and the range of every numeric column.

    Examples
    --------
    >>> from dpfair.datasets import adult_schema
    >>> adult_schema().ranges["hours-per-week"]
    (1.0, 99.0)
    """
    return ADULT_SCHEMA
