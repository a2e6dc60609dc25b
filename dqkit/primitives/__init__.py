"""Kernels shared by several systems, written once: row fingerprints, connected components, the
violation model, checked keys, string similarity and key handling."""
