"""Typer's option coercion without a pydantic validator for an option that was not given.

Typer 0.29 coerces every option of a command through a pydantic ``TypeAdapter`` that it builds on first use,
and it uses every option on every run: a value that was not given (``None``) builds its adapter, then returns
``None`` (or ``()`` for a repeatable option) without calling it. A workload command has about thirty options,
so a cold `gpuplan estimate` built about thirty validators (and imported typer's pydantic adapters) to coerce
three strings. :func:`install` puts a stand-in in front of each option's coercion that answers itself, with
what typer returns, for: a value not given; a plain ``str`` (typer's string validator returns it unchanged); a
plain ``Path`` (typer's own path checks, on the ``Path(value)`` its validator would make); an ``int`` or
``float`` default of an option of that type without bounds. Any other value goes to the validator typer builds,
built the first time it is needed. Typer releases without this machinery (before 0.29) are left as they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class _LazyCoercion:
    """Stands in for typer's RuntimeParam: the same answers, the validator built only when a value needs it."""

    __slots__ = ("_descriptor", "_plain_str", "_plain_path", "_plain_number", "_real")

    def __init__(self, descriptor: Any) -> None:
        self._descriptor = descriptor
        info = descriptor.parameter_info
        plain = descriptor.file_annotation is None and getattr(info, "parser", None) is None
        # typer's str validator is `str(value)` then pydantic's str check: the identity for an exact str
        self._plain_str = plain and descriptor.annotation is str
        # typer's Path validator is pydantic's `Path(value)` then its own checks (coerce_cli_path), which take a
        # Path as it is
        self._plain_path = plain and descriptor.annotation is Path and getattr(info, "path_type", None) is None
        # typer's int and float validators without bounds are pydantic's: a value of the type itself passes as it is
        # (a default such as --top's 5)
        unbounded = all(getattr(info, k, None) is None for k in ("min", "max")) and not getattr(info, "clamp", None)
        self._plain_number = descriptor.annotation if plain and unbounded and descriptor.annotation in (int, float) \
            else None
        self._real: Any = None

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if value is None:    # typer's RuntimeParam.coerce returns these before it validates anything
            return () if (param.multiple or param.nargs == -1) else None
        if type(value) is self._plain_number and param.nargs == 1 and not param.multiple:
            return value
        if type(value) is str and param.nargs == 1 and not param.multiple:
            if self._plain_str:
                return value
            if self._plain_path:
                from typer._param_types import coerce_cli_path

                return coerce_cli_path(Path(value), self._descriptor.parameter_info, path_type=Path, param=param,
                                       ctx=ctx)
        if self._real is None:
            from typer._coercion import build_runtime_param

            self._real = build_runtime_param(self._descriptor)
        return self._real.coerce(value, param=param, ctx=ctx)


def _supported() -> bool:
    try:
        from typer import _coercion, core
        from typer._param_types import coerce_cli_path
    except ImportError:
        return False
    parameter = getattr(core, "_TyperParameter", None)
    return (parameter is not None and callable(getattr(parameter, "get_runtime_param", None))
            and callable(getattr(_coercion, "build_runtime_param", None)) and callable(coerce_cli_path))


def install() -> None:
    """Give every typer option and argument (the help option typer makes on demand included) the lazy coercion."""
    if not _supported():
        return
    from typer.core import _TyperParameter

    if getattr(_TyperParameter.get_runtime_param, "_gpuplan_lazy", False):
        return

    def get_runtime_param(self: Any) -> Any:
        if self._runtime_param is None:
            self._runtime_param = _LazyCoercion(self.type_descriptor)
        return self._runtime_param

    get_runtime_param._gpuplan_lazy = True   # type: ignore[attr-defined]
    _TyperParameter.get_runtime_param = get_runtime_param   # type: ignore[method-assign]
