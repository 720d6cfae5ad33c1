"""scikit-learn's estimator checks for every ``CONTRACT`` instance of the registry without a contract file of its own.

A class whose checks need more (its own instance per check, extra contract tests) keeps them in a file
``tests/<subpackage>/test_<topic>_sklearn_contract.py`` that names it; every other ``CONTRACT`` entry is checked
here, with the checks that cannot apply listed in ``CONTRACT_EXPECTED_FAILED`` (tests/_registry.py).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from sklearn.utils.estimator_checks import parametrize_with_checks

from _registry import CONTRACT, CONTRACT_EXPECTED_FAILED, contract_instances
from dpfair.privacy import PrivacyLeakWarning

TESTS = Path(__file__).resolve().parent


def own_contract_files() -> dict[str, list[str]]:
    """``class name -> the contract files that name it`` (``tests/**/test_*_sklearn_contract.py``)."""
    texts = {p: p.read_text(encoding="utf-8") for p in TESTS.rglob("test_*_sklearn_contract.py")}
    return {name: [str(p.relative_to(TESTS)) for p, text in texts.items() if re.search(rf"\b{name}\b", text)]
            for name in CONTRACT}


GENERIC = sorted(name for name, files in own_contract_files().items() if not files)


@parametrize_with_checks(contract_instances(*GENERIC),
                         expected_failed_checks=lambda est: CONTRACT_EXPECTED_FAILED.get(type(est).__name__, {}))
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check(estimator)


def test_every_contract_instance_is_checked_once_here_or_in_its_own_file():
    files = own_contract_files()
    assert all(name in GENERIC or files[name] for name in CONTRACT)
    stale = sorted(set(CONTRACT_EXPECTED_FAILED) - set(GENERIC))
    assert not stale, f"CONTRACT_EXPECTED_FAILED lists classes checked in their own file: {stale}"
