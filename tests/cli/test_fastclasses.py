"""gpuplan.cli.fastclasses: dataclasses whose repr, comparisons, hash and frozen guards are closures behave as the
ones dataclasses compiles: the same strings, results, hashes and errors, class by class."""

from __future__ import annotations

import dataclasses
import operator
import sys
from dataclasses import dataclass, field
from typing import Any

import pytest

from gpuplan.cli import fastclasses

pytestmark = pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the generators copied are Python 3.11's")

OPTIONS = [dict(), dict(frozen=True), dict(frozen=True, eq=False), dict(eq=False), dict(order=True),
           dict(frozen=True, order=True), dict(unsafe_hash=True), dict(frozen=True, slots=True),
           dict(frozen=True, repr=False), dict(eq=True, frozen=True, slots=True, order=True)]


def _classes(options: dict) -> dict[str, type]:
    """A family of dataclasses with OPTIONS: no field, one field, many, defaults and factories, fields left out of
    the repr or the comparison, a subclass, a field named like a builtin."""

    @dataclass(**options)
    class Empty:
        pass

    @dataclass(**options)
    class One:
        x: int = 1

    @dataclass(**options)
    class Many:
        a: int = 0
        b: str = "b"
        c: float = 1.5
        d: tuple = ()
        hidden: int = field(default=7, repr=False)
        ignored: int = field(default=8, compare=False)
        type: str = "t"

    @dataclass(**options)
    class Child(Many):
        e: Any = None

    return {"Empty": Empty, "One": One, "Many": Many, "Child": Child}


def _instances(classes: dict[str, type]) -> list[Any]:
    m = classes["Many"]
    return [classes["Empty"](), classes["One"](), classes["One"](2), m(), m(1, "x", 2.5, (1, 2), 9, 10),
            m(ignored=99), m(hidden=5), classes["Child"](), classes["Child"](e=[1]), classes["Child"](e=m())]


def _outcome(fn, *args) -> Any:
    try:
        return ("ok", fn(*args))
    except Exception as exc:  # noqa: BLE001 - the error is compared
        return ("error", type(exc).__name__, str(exc))


def _behaviour(options: dict) -> list[Any]:
    classes = _classes(options)
    objs = _instances(classes)
    out: list[Any] = []
    for a in objs:
        out.append(_outcome(repr, a) if "__repr__" in type(a).__dict__ else "object's repr")
        own_hash = type(a).__dict__.get("__hash__", "inherited")   # object's own hash is by identity: not compared
        out.append(_outcome(hash, a) if callable(own_hash) else own_hash)
        out.append(_outcome(setattr, a, "a", 5))
        out.append(_outcome(setattr, a, "new_attr", 5))
        out.append(_outcome(delattr, a, "x"))
        out.append(sorted(k for k in type(a).__dict__ if k.startswith("__") and callable(type(a).__dict__[k])))
        for b in objs:
            for op in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
                out.append(_outcome(getattr(a, op), b))
        out.append(_outcome(operator.eq, a, object()))
    recursive = classes["Child"](e=[])
    recursive.e.append(recursive)   # a value that contains itself: "..." in the repr
    out.append(repr(recursive) if options.get("repr", True) else None)
    out.append([getattr(type(o).__dict__.get(name), "__qualname__", None) for o in objs
                for name in ("__repr__", "__eq__", "__hash__", "__setattr__", "__lt__")])
    return out


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "plain")
def test_closures_behave_as_the_compiled_methods(options):
    was = fastclasses.install()
    assert was, "Python 3.11's dataclasses generators are the ones fastclasses expects"
    fast = _behaviour(options)
    with fastclasses.compiled():
        assert dataclasses._repr_fn is not fastclasses._repr_fn
        slow = _behaviour(options)
    assert dataclasses._repr_fn is fastclasses._repr_fn
    assert fast == slow


def test_the_cli_installs_it_and_makes_dataclasses_without_compiling_their_methods():
    import builtins

    from clirun import run_cli

    code, _out, _err = run_cli("--version")
    assert code == 0 and dataclasses._repr_fn is fastclasses._repr_fn
    compiled_sources: list[str] = []
    real_exec = builtins.exec

    def counting(source, *args, **kwargs):
        if isinstance(source, str):
            compiled_sources.append(source)
        return real_exec(source, *args, **kwargs)

    builtins.exec = counting
    try:
        @dataclass(frozen=True, order=True)
        class Point:
            x: int
            y: int = 0
    finally:
        builtins.exec = real_exec
    assert len(compiled_sources) == 1 and "def __init__" in compiled_sources[0]
    assert Point(1) < Point(2) and Point(1, 2) == Point(1, 2) and hash(Point(1)) == hash((1, 0))
    assert repr(Point(1)).endswith("Point(x=1, y=0)")
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'x'"):
        Point(1).x = 2
