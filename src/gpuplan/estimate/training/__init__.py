"""Training time: the step (step.py) over the costs it is built from (costs.py); from_workload.py turns a resolved
workload into their inputs and the training memory (the LLM training estimate estimate.core dispatches to)."""
