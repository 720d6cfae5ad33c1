"""Datasets: verified loaders for the real data the papers use, and seeded synthetic generators.

The data home is ``$DPFAIR_DATA_HOME`` if set, else the folder saved by ``dpfair data home PATH``,
else a per-user cache folder (:func:`get_data_home`); missing files are downloaded from the
official upstream and verified by sha256.
"""

from dpfair.datasets._download import (
    DATASETS,
    REMOTE_FILES,
    DataIntegrityError,
    DataUnavailableError,
    RemoteFile,
    data_home_source,
    dataset_of_file,
    dataset_paths,
    fetch_file,
    get_data_home,
    save_data_home,
    saved_data_home_file,
)
from dpfair.datasets.loaders import (
    Dataset,
    FicoData,
    load_acs_excerpt,
    load_adult,
    load_communities,
    load_fico,
    load_law_school,
)
from dpfair.datasets.schemas import ADULT_SCHEMA, TableSchema, adult_schema
from dpfair.datasets.synthetic import make_bandit_contexts, make_classification, make_regression, make_selection_pmf

__all__ = [
    "ADULT_SCHEMA",
    "DATASETS",
    "REMOTE_FILES",
    "DataIntegrityError",
    "DataUnavailableError",
    "Dataset",
    "FicoData",
    "RemoteFile",
    "TableSchema",
    "adult_schema",
    "data_home_source",
    "dataset_of_file",
    "dataset_paths",
    "fetch_file",
    "get_data_home",
    "load_acs_excerpt",
    "load_adult",
    "load_communities",
    "load_fico",
    "load_law_school",
    "make_bandit_contexts",
    "make_classification",
    "make_regression",
    "make_selection_pmf",
    "save_data_home",
    "saved_data_home_file",
]
