"""The published schemas against the staged data (DPFAIR_DATA_HOME): every level and value is declared."""

import numpy as np
import pytest

from dpfair import datasets as ds
from dpfair.datasets import ADULT_SCHEMA, DataUnavailableError, TableSchema, adult_schema
from dpfair.preprocessing import DeclaredOneHotEncoder, DeclaredRangeScaler


def _available(name):
    try:
        ds.dataset_paths(name, download=False)
        return True
    except DataUnavailableError:
        return False


needs_adult = pytest.mark.skipif(not _available("adult"),
                                 reason="adult is not in DPFAIR_DATA_HOME (run `dpfair data fetch adult`)")


@pytest.fixture(scope="module")
def adult_table():
    adult = ds.load_adult(drop_missing=False, download=False)  # every row, "?" as NaN
    return adult.X.assign(sex=adult.sensitive)


@needs_adult
def test_adult_schema_covers_every_column_level_and_value_of_the_published_files(adult_table):
    assert set(adult_table.columns) == set(ADULT_SCHEMA.categories) | set(ADULT_SCHEMA.ranges)
    for column, levels in ADULT_SCHEMA.categories.items():
        present = set(adult_table[column].dropna().unique())
        assert present <= set(levels), f"{column}: levels in the data that the schema does not declare"
        assert (None in levels) == bool(adult_table[column].isna().any()), f"{column}: missing level"
    for column, (low, high) in ADULT_SCHEMA.ranges.items():
        values = adult_table[column]
        assert not values.isna().any() and low <= values.min() and values.max() <= high, column


@needs_adult
def test_the_declared_transformers_take_every_row_of_adult(adult_table):
    encoded = DeclaredOneHotEncoder(ADULT_SCHEMA.encoder_categories()).fit_transform(
        adult_table[list(ADULT_SCHEMA.categories)])
    assert (encoded.sum(axis=1) == len(ADULT_SCHEMA.categories)).all()  # one 1 per column, no undeclared level
    scaled = DeclaredRangeScaler(dict(ADULT_SCHEMA.ranges)).fit_transform(adult_table[list(ADULT_SCHEMA.ranges)])
    assert np.isfinite(scaled).all()


def test_adult_schema_is_public_read_only_and_gives_fresh_encoder_categories():
    assert adult_schema() is ADULT_SCHEMA and isinstance(ADULT_SCHEMA, TableSchema)
    assert len(ADULT_SCHEMA.categories["native-country"]) == 41 + 1  # adult.names' countries, and missing
    with pytest.raises(TypeError):
        ADULT_SCHEMA.categories["race"] = ("White",)  # a shared constant: read-only
    first = ADULT_SCHEMA.encoder_categories(["workclass"], missing=False)
    first["workclass"].append("Undeclared")
    assert ADULT_SCHEMA.encoder_categories(["workclass"]) == {"workclass": list(ADULT_SCHEMA.categories["workclass"])}
    assert None not in ADULT_SCHEMA.encoder_categories(["occupation"], missing=False)["occupation"]
    with pytest.raises(KeyError, match="education"):
        ADULT_SCHEMA.encoder_categories(["education"])
