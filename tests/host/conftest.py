"""Fixtures for the host tests."""
import pytest

from testkit import ROOT, tool


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def micropython():
    return tool("micropython")


@pytest.fixture(scope="session")
def mpy_cross():
    return tool("mpy-cross")
