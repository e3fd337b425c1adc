"""The engine: the TRM network, PTRM sampling, training, datasets, metrics, checkpoints.

It sees token arrays and vocabulary tables only; it never imports a codec by name.
"""
