"""Rule tables, as data: derivatives (reverse and forward mode) and, later, batching.

Each table is keyed by the qualified name of the operation (``"numpy.sin"``);
entries are built by small constructors named after the kind of rule.
Transformations look rules up and never mention an operation by name.
"""
