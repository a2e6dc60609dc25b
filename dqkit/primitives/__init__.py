"""Kernels shared by several systems, written once: row fingerprints, connected components, the
violation model, checked keys, string similarity, key handling and change detection between two
versions of a table (``changes``: inserted / deleted / updated rows, for ``detect --since`` and
``dedup --since``)."""
