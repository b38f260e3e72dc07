"""The YAML loader with limits that gpuplan.files.safeio parses user files with (imported on first use, so a
command that reads no YAML never imports PyYAML): a nesting limit, an expanded-size limit (alias bombs),
bounded integers and numbers, guarded tag constructors and YAML 1.2 floats (``2e9``)."""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from gpuplan.files.input_limits import MAX_DEPTH, MAX_INT_DIGITS, MAX_NODES



class LimitedYamlLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader with a nesting limit, an expanded-size limit and YAML 1.2 floats (``2e9``)."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(None, None, f"nested more than {MAX_DEPTH} levels deep", mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_document(self, node: Node) -> Any:
        _check_expanded_size(node)
        return super().construct_document(node)


LimitedYamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                |\.[0-9_]+(?:[eE][-+][0-9]+)?
                |[-+]?\.(?:inf|Inf|INF)
                |\.(?:nan|NaN|NAN))$""", re.VERBOSE),
    list("-+0123456789."),
)


def _construct_int(loader: yaml.SafeLoader, node: ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    if sum(ch.isdigit() for ch in text) > MAX_INT_DIGITS:
        raise yaml.constructor.ConstructorError(None, None, f"an integer with more than {MAX_INT_DIGITS} digits",
                                                node.start_mark)
    try:
        return int(yaml.SafeLoader.construct_yaml_int(loader, node))
    except (ValueError, IndexError, TypeError):
        raise yaml.constructor.ConstructorError(None, None, f"invalid integer {text[:40]!r}", node.start_mark) from None


def _construct_float(loader: yaml.SafeLoader, node: ScalarNode) -> float:
    text = str(loader.construct_scalar(node))
    if len(text) > 400:
        raise yaml.constructor.ConstructorError(None, None, "a number longer than 400 characters", node.start_mark)
    try:
        return float(yaml.SafeLoader.construct_yaml_float(loader, node))
    except (ValueError, IndexError, TypeError):
        raise yaml.constructor.ConstructorError(None, None, f"invalid number {text[:40]!r}", node.start_mark) from None


def _guarded(tag: str) -> None:
    original = yaml.SafeLoader.yaml_constructors[tag]

    def construct(loader: yaml.SafeLoader, node: Node) -> Any:
        try:
            return original(loader, node)
        except yaml.YAMLError:
            raise
        except (ValueError, IndexError, TypeError, KeyError, OverflowError) as exc:
            raise yaml.constructor.ConstructorError(None, None, f"invalid {tag.rsplit(':', 1)[-1]} value "
                                                    f"({type(exc).__name__})", node.start_mark) from None

    LimitedYamlLoader.add_constructor(tag, construct)


LimitedYamlLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
LimitedYamlLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)
for _tag in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:binary",
             "tag:yaml.org,2002:set", "tag:yaml.org,2002:omap", "tag:yaml.org,2002:pairs", "tag:yaml.org,2002:null"):
    _guarded(_tag)


def _check_expanded_size(root: Node) -> None:
    """Refuse a document whose alias-expanded tree has more than MAX_NODES nodes, or that refers to
    itself through an alias (memoized depth-first walk, no recursion)."""
    size: dict[int, int] = {}
    open_nodes: set[int] = set()  # on the current path: meeting one again means a recursive alias
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if isinstance(node, MappingNode):
            kids: list[Node] = [n for pair in node.value for n in pair]
        elif isinstance(node, SequenceNode):
            kids = list(node.value)
        else:
            kids = []
        if finished:
            open_nodes.discard(key)
            total = 1 + sum(size[id(k)] for k in kids)
            if total > MAX_NODES:
                raise yaml.composer.ComposerError(
                    None, None, f"expands to more than {MAX_NODES:,} values (too many aliases)", node.start_mark)
            size[key] = total
            continue
        if key in size:
            continue
        if key in open_nodes:
            raise yaml.composer.ComposerError(None, None, "invalid recursive alias (a value that contains itself)",
                                              node.start_mark)
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((k, False) for k in kids if id(k) not in size)
