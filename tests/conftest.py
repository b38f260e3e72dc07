"""Test-wide setup: this folder is importable, so helpers such as `clirun` are shared by every test."""
