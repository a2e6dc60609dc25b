"""Input: tables read by name (``sources``) and files dqkit reads back checked without Spark (``filecheck``)."""
