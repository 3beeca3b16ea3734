"""The version of srctrans (a module of its own, so the modules that stamp it on generated files import nothing else)."""

__version__ = "0.1.0"
