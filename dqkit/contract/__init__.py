"""The result contract every system returns: ``result`` (the base), ``render`` (text and HTML, once)
and ``charts`` (figures drawn from computed summaries)."""
