"""Every assumption block in data/efficiency.yaml names its source (the numbers are reported with each result)."""

import importlib.resources

import yaml


def _blocks(node, path=()):
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from _blocks(value, path + (key,))


def test_every_section_and_every_table_has_a_source_or_inherits_one():
    data = yaml.safe_load((importlib.resources.files("gpuplan") / "data" / "efficiency.yaml").read_text())
    for section, body in data.items():
        assert isinstance(body.get("source"), str) and body["source"], section
    for path, block in _blocks(data):
        numeric = [k for k, v in block.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(path) >= 2 and len(numeric) >= 3:  # a table of values (per GPU, per framework, ...)
            parent = data
            for key in path[:-1]:
                parent = parent[key]
            assert "source" in block or "source" in parent, "/".join(path)
