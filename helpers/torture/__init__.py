"""The torture run: thousands of contended commits, writers killed mid-commit, services restarted; every figure from storage (see helpers/torture/run.py).

Imports: :mod:`helpers.bench` and every layer below it.
"""
