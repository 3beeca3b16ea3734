"""Normalizing passes: each takes a function node and returns one in a documented shape.

The transformations rely on the contract in each pass's module docstring and on
nothing else. Run in order: :mod:`desugar`, then :mod:`anf`.
"""
