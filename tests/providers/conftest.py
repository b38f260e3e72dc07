"""Fixtures for the live-refresh tests; the fakes live in aliyun_fakes.py (imported first: it pins the
SDK's environment switches before anything imports the SDK)."""

from aliyun_fakes import _isolated_env, _no_network, cache_dir, transport  # noqa: F401
