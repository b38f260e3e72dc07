"""gpuplan: plan cloud GPU instances for deep-learning workloads."""
__version__ = "0.1.0"
