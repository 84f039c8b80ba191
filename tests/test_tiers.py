"""The tiers of tests/conftest.py name folders and modules that exist: a module renamed
or moved would otherwise leave its tier without a word."""

from __future__ import annotations

from .conftest import TESTS, TIERS


def test_every_folder_and_module_of_a_tier_exists():
    missing = [where for _tier, paths in TIERS for where in paths if not (TESTS / where).exists()]
    assert not missing, f"tests/conftest.py TIERS names what is not there: {missing}"
