"""dqkit's widget layer (the design card's widgets/ folder, installed as ``dqkit.widgets``)."""
