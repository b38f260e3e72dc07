"""`python -m gpuplan.cli`."""

from gpuplan.cli import main

main()
