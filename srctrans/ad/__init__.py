"""Automatic differentiation by source transformation: reverse mode (and, later, forward mode)."""
