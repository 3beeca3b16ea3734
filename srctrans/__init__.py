"""srctrans: JAX-style transformations for plain NumPy code, by source rewriting."""

__version__ = "0.1.0"
