"""Advice every plan carries: storage, network, the node environment (image, pins, mirrors) and operations."""
