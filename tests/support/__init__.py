"""Helpers shared by the test tree that are not fixtures (fixtures live in conftest.py files)."""
