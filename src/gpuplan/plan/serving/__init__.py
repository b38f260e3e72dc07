"""Serving plans: the engine configuration, replicas from the load model (queueing, traffic over the day,
prefill/decode pools), costs on the stated traffic and the serving report."""
