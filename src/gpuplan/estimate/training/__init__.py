"""Training time: the step (step.py) over the costs it is built from (costs.py)."""
