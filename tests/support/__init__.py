"""The test suite's harness: the Spark settings, the cluster and browser drivers, the file schedule, the
snapshot plugin and the toy system. Not tests themselves; imported as ``support.<module>`` (tests/ is on
``sys.path`` under pytest) or run as scripts (``python tests/support/<module>.py ...``)."""
