"""gpuplan: which cloud GPU instances, how many, configured how, for how long and at what cost.

Public API (lazy: importing gpuplan loads no catalog and never imports torch):

- ``load_workload(path_or_mapping, **flags)`` -> Workload
- ``estimate(workload, **flags)`` -> Estimate (``.memory``, ``.performance``, ``.to_dict()``)
- ``max_fit(workload, "batch_size" | "seq_len" | "prompt_tokens" | "concurrency")`` -> (value, Estimate)
- ``recommend(workload, **flags)`` -> Recommendation (``.plans``, ``.to_dict()``)
- ``quick(params_b, task)`` -> the decision-tree answer
- ``build_plan(workload, out_dir, pick=1)`` -> the plan bundle folder
- ``GpuplanError`` — every user-facing error (message + hint)

Every argument is checked at this boundary (pydantic ``validate_call``): a wrong type or an
out-of-range value is a ``GpuplanError`` naming the argument, never a ``TypeError`` from deep inside.
"""

from __future__ import annotations

import functools
import importlib
import math
import types
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from gpuplan.errors import GpuplanError
from gpuplan.i18n import _

if TYPE_CHECKING:
    from gpuplan.estimate.core import Estimate
    from gpuplan.plan.quick import QuickResult
    from gpuplan.plan.recommend import Recommendation
    from gpuplan.workload import Workload

__version__ = "0.1.0"
__all__ = ["GpuplanError", "__version__", "build_plan", "estimate", "load_workload", "max_fit", "quick", "recommend"]

# `gpuplan.estimate` is both this package's public function and a subpackage. Python binds a
# subpackage as an attribute of its parent the first time the subpackage is imported, which would
# replace the function (and `gpuplan.estimate(w)` would fail on its second call). Importing the
# subpackage here, before the function is defined, makes that binding happen now; the `def` below
# then wins for good, because a module already in sys.modules is never bound again. The subpackage's
# __init__ is empty, so this costs nothing. (`gpuplan.plan.quick` is handled the same way in
# gpuplan/plan/__init__.py.)
importlib.import_module("gpuplan.estimate")

F = TypeVar("F", bound=Callable[..., Any])


_EXPECTED = {
    "source": "a workload file path, a mapping of workload keys or a Workload",
    "workload": "a workload file path, a mapping of workload keys or a Workload",
    "field": "one of 'batch_size', 'seq_len', 'prompt_tokens', 'concurrency'",
    "top": "an integer from 1 to 100",
    "memory_headroom": "a fraction of GPU memory from 0 to below 1, e.g. 0.02",
    "price_files": "a list of price file paths",
    "params_b": "a parameter count: a positive number of billions (7) or text such as '7B' or '350M'",
    "task": "a task name: pretrain, full, lora, qlora or inference (infer)",
    "out_dir": "a folder path",
    "pick": "an integer from 1 to 20",
    "force": "True or False",
    "lang": "'en' or 'zh'",
}


def _argument_error(fn: Callable[..., Any], exc: Any) -> GpuplanError:
    """One GpuplanError from pydantic's ValidationError: which argument, what it got, what it wants."""
    import inspect

    errors = exc.errors(include_url=False)
    err = errors[0]
    params = [p.name for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    head = err.get("loc", ("?",))[0] if err.get("loc") else "?"
    name = params[head] if isinstance(head, int) and head < len(params) else str(head)
    kind = str(err.get("type", ""))
    value = err.get("input")
    shown = repr(value) if isinstance(value, (int, float, str, bool, type(None))) else type(value).__name__
    if len(shown) > 60:
        shown = shown[:57] + "..."
    where = f"gpuplan.{fn.__name__}()"
    expected = _EXPECTED.get(name, "")
    hint = (f"{name!r} takes {expected}. " if expected else "") + f"See help(gpuplan.{fn.__name__})."
    if kind.startswith("missing"):
        return GpuplanError(_("{where}: argument {name!r} is required.").format(where=where, name=name), hint=hint)
    if (kind.startswith("unexpected") or kind == "multiple_argument_values") and not isinstance(head, int):
        return GpuplanError(_("{where}: unexpected argument {name!r}.").format(where=where, name=name), hint=hint)
    if kind.startswith("unexpected") and isinstance(head, int):
        return GpuplanError(_("{where}: unexpected positional argument {shown}.").format(where=where, shown=shown), hint=hint)
    same = [e for e in errors if e.get("loc", ())[:1] == (head,)]
    if len(same) > 1:  # a union: every form failed; a range error says more than a type error
        ranged = [e for e in same if not str(e.get("type", "")).endswith(("_type", "instance_of"))]
        if not ranged:
            return GpuplanError(_("{where}: argument {name!r} has the wrong type ({name2}).").format(where=where, name=name, name2=type(value).__name__), hint=hint)
        err = ranged[0]
    msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    return GpuplanError(_("{where}: argument {name!r} = {shown}: {msg}.").format(where=where, name=name, shown=shown, msg=msg), hint=hint)


def _checked(fn: F) -> F:
    """Validate the arguments of a public function with pydantic; errors become GpuplanError.

    The validator is built on the first call (pydantic is imported only then)."""

    @functools.cache
    def validator() -> Callable[..., Any]:
        from pydantic import ConfigDict, validate_call

        _install_boundary_types()
        # A copy without the return annotation: results are not validated, and their types are
        # imported only under TYPE_CHECKING.
        body = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        body.__kwdefaults__ = fn.__kwdefaults__
        body.__annotations__ = {k: v for k, v in fn.__annotations__.items() if k != "return"}
        return validate_call(config=ConfigDict(arbitrary_types_allowed=True))(body)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from pydantic import ValidationError

        try:
            call = validator()(*args, **kwargs)
        except ValidationError as exc:
            raise _argument_error(fn, exc) from None
        return call

    return wrapper  # type: ignore[return-value]


def _finite(v: float) -> float:
    if not math.isfinite(v):
        raise ValueError("must be a finite number")
    return v


# Argument types of the boundary. For type checkers they are plain aliases; at run time the pydantic
# versions are put into this module's namespace by _install_boundary_types() on the first call, so
# `import gpuplan` stays free of pydantic.
if TYPE_CHECKING:
    Source = Workload | dict[Any, Any] | str | Path
    _Top = int
    _Headroom = float
    _Pick = int
    _Lang = str
    _Params = float | str
    _Str = str
    _Bool = bool


@functools.cache
def _install_boundary_types() -> None:
    from pydantic import AfterValidator, Field, StrictBool, StrictInt, StrictStr

    class _WorkloadInstance:
        """gpuplan.workload.Workload, checked by isinstance (no re-validation, no copy)."""

        @classmethod
        def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
            from pydantic_core import core_schema

            from gpuplan.workload import Workload

            return core_schema.is_instance_schema(Workload)

    finite = AfterValidator(_finite)
    globals().update(
        Source=_WorkloadInstance | dict | Path,
        _Top=Annotated[StrictInt, Field(ge=1, le=100)],
        _Headroom=Annotated[float, Field(ge=0, lt=1), finite],
        _Pick=Annotated[StrictInt, Field(ge=1, le=20)],
        _Lang=Literal["en", "zh"],
        _Params=Annotated[float, Field(strict=True, gt=0), finite] | StrictStr,
        _Str=StrictStr,
        _Bool=StrictBool,
    )


def _inner(source: Source) -> Workload | dict[Any, Any] | str:
    """The validated source as the inner functions take it (a path as text)."""
    return str(source) if isinstance(source, Path) else source


@_checked
def load_workload(source: Source, **flags: Any) -> Workload:
    """A Workload from a file path, a mapping or a Workload; ``flags`` are CLI-style overrides."""
    from gpuplan.workload_loading import load_workload as _load

    return _load(_inner(source), **flags)


@_checked
def estimate(workload: Source, **flags: Any) -> Estimate:
    """Memory, time and throughput of a workload on its fixed hardware."""
    from gpuplan.estimate.core import estimate as _estimate

    return _estimate(_inner(workload), **flags)


@_checked
def max_fit(workload: Source, field: _Str, **flags: Any) -> tuple[int, Estimate | None]:
    """Largest ``field`` (batch_size | seq_len | prompt_tokens | concurrency) that fits the hardware."""
    from gpuplan.estimate.max_fit import max_fit as _max_fit

    return _max_fit(_inner(workload), field, **flags)


@_checked
def recommend(workload: Source, *, top: _Top = 5, memory_headroom: _Headroom = 0.02,
              price_files: tuple[Path, ...] = (), **kwargs: Any) -> Recommendation:
    """Ranked plans (1 <= top <= 100); ``memory_headroom`` is the fraction of GPU memory kept free."""
    from gpuplan.plan.recommend import recommend as _recommend

    return _recommend(_inner(workload), top=top, memory_headroom=memory_headroom, price_files=price_files, **kwargs)


@_checked
def quick(params_b: _Params, task: _Str = "lora", **kwargs: Any) -> QuickResult:
    """The guides' decision tree by parameter count (7, "7B", "350M"), answered by the estimators."""
    from gpuplan.plan.quick import quick as _quick

    return _quick(params_b, task, **kwargs)


@_checked
def build_plan(workload: Source, out_dir: Path, *, pick: _Pick = 1, force: _Bool = False,
               lang: _Lang = "en") -> Path:
    """Write the plan bundle of the ``pick``-th ranked plan to ``out_dir``; returns the folder."""
    from gpuplan.write_bundle import write_plan_bundle

    path, _summary = write_plan_bundle(load_workload(workload), Path(out_dir), pick=pick, force=force, lang=lang)
    return path
