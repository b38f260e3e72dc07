"""Dataclasses made without compiling source text for their repr, comparisons, hash and frozen guards.

Python 3.11's dataclasses write each generated method as source and compile it (``exec``): about half a million
instructions a method, five or six methods a class. A cold `gpuplan estimate` makes some 250 dataclasses after
the command line is read (pydantic's and annotated_types' among them), and compiling their methods cost it about
a tenth of its run. :func:`install` swaps the generators of ``__repr__``, ``__eq__`` and the order methods,
``__hash__``, ``__setattr__`` and ``__delattr__`` for closures that do what the compiled code does (the same
values, the same errors; tests/cli/test_fastclasses.py compares them on many classes); ``__init__`` is still
compiled by dataclasses. Only Python 3.11, whose generators this copies, and only when they have the expected
parameters; the CLI installs it (gpuplan.cli.main), a library user's process is left alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import operator
import sys
from collections.abc import Iterator
from typing import Any

_OPS = {"==": operator.eq, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_EXPECTED = {"_repr_fn": ("fields", "globals"), "_hash_fn": ("fields", "globals"),
             "_cmp_fn": ("name", "op", "self_tuple", "other_tuple", "globals"),
             "_frozen_get_del_attr": ("cls", "fields", "globals")}


def _getter(names: tuple[str, ...]) -> Any:
    """self -> the tuple (self.a, self.b, ...) of ``names``, in order (what ``_tuple_str`` code builds)."""
    if not names:
        return lambda self: ()
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda self: (one(self),)
    return operator.attrgetter(*names)


def _repr_fn(fields, globals):
    names = tuple(f.name for f in fields)

    def __repr__(self):
        return self.__class__.__qualname__ + "(" + ", ".join(
            f"{name}={getattr(self, name)!r}" for name in names) + ")"

    return dataclasses._recursive_repr(__repr__)   # type: ignore[attr-defined]


def _cmp_fn(name, op, self_tuple, other_tuple, globals):
    # self_tuple is dataclasses' source text "(self.a,self.b,)" or "()": the compared fields, in order
    names = tuple(part.split(".", 1)[1] for part in self_tuple.strip("(),").split(",") if part)
    get, compare = _getter(names), _OPS[op]

    def method(self, other):
        if other.__class__ is self.__class__:
            return compare(get(self), get(other))
        return NotImplemented

    method.__name__ = method.__qualname__ = name
    return method


def _hash_fn(fields, globals):
    get = _getter(tuple(f.name for f in fields))

    def __hash__(self):
        return hash(get(self))

    return __hash__


def _frozen_get_del_attr(cls, fields, globals):
    names = tuple(f.name for f in fields)
    error = dataclasses.FrozenInstanceError

    def __setattr__(self, name, value):
        if type(self) is cls or name in names:
            raise error(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in names:
            raise error(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __setattr__, __delattr__


def _supported() -> bool:
    if sys.version_info[:2] != (3, 11) or not hasattr(dataclasses, "_recursive_repr"):
        return False
    for name, params in _EXPECTED.items():
        fn = getattr(dataclasses, name, None)
        code = getattr(fn, "__code__", None)
        if code is None or code.co_varnames[:code.co_argcount] != params:
            return False
    return True


_MINE = {"_repr_fn": _repr_fn, "_cmp_fn": _cmp_fn, "_hash_fn": _hash_fn, "_frozen_get_del_attr": _frozen_get_del_attr}


def install() -> bool:
    """Use the closures for every dataclass made from now on (True when installed)."""
    if getattr(dataclasses._repr_fn, "__module__", None) == __name__:   # type: ignore[attr-defined]
        return True
    if not _supported():
        return False
    for name, fn in _MINE.items():
        setattr(dataclasses, name, fn)
    return True


@contextlib.contextmanager
def compiled() -> Iterator[None]:
    """dataclasses' own generators for the duration (the tests compare both)."""
    saved = {name: getattr(dataclasses, name) for name in _MINE}
    for name in _MINE:
        setattr(dataclasses, name, _ORIGINAL[name])
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(dataclasses, name, fn)


_ORIGINAL = {name: getattr(dataclasses, name) for name in _MINE}
