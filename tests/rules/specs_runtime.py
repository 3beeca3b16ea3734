"""Specs for the rules of ``srctrans.rules.runtime_helpers`` (merged into ``specs.SPECS``)."""

import numpy as np  # noqa: F401

import srctrans.runtime as rt  # noqa: F401

RUNTIME_SPECS: dict = {}
