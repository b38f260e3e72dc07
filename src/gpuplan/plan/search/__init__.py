"""What the recommender searches: the instance types in scope, the parallel layouts and memory-saving knobs, the
recipe (micro-batch, accumulation), model parallelism where it pays, batch jobs' batch, and the feasibility checks."""
