"""Input and output: tables read by name (``sources``), file checks without Spark (``filecheck``) and
atomic writes (``atomic``)."""
