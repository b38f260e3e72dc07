"""Click's usage errors (unknown option, bad value, missing argument) as one line and a hint, in the
language of the command line."""

from __future__ import annotations

import re
import sys
from typing import Any

from gpuplan.cli.common import _emit_json
from gpuplan.i18n import _


def _argv_lang() -> str:
    """The --lang of the command line (usage errors happen before the command runs)."""
    from gpuplan.i18n import default_lang

    args = sys.argv[1:]
    for i, arg in enumerate(args):
        value = arg.split("=", 1)[1] if arg.startswith("--lang=") else (args[i + 1] if arg == "--lang" and
                                                                         i + 1 < len(args) else None)
        if value is not None:
            return "zh" if value.lower().startswith("zh") else "en"
    return default_lang()


def _usage_message(exc: Any) -> str:
    """Click's usage errors as our own sentences (click's are English only); English keeps click's wording."""
    kinds = {k.__name__ for k in type(exc).__mro__}   # click's classes, or the copy typer vendors

    param = getattr(exc, "param", None)
    name = (getattr(exc, "param_hint", None) or (param.opts[0] if param is not None and getattr(param, "opts", None)
                                                    else getattr(param, "name", None) or ""))
    if isinstance(name, (list, tuple)):
        name = " / ".join(name)
    name = str(name).strip("'\"")
    if "NoSuchOption" in kinds:
        close = ", ".join(getattr(exc, "possibilities", None) or ())
        return (_("No such option: {option}. Did you mean {close}?").format(option=exc.option_name, close=close)
                if close else _("No such option: {option}.").format(option=exc.option_name))
    if "MissingParameter" in kinds:
        return _("Missing {param}.").format(param=name or _("argument"))
    if "BadParameter" in kinds:
        detail = str(getattr(exc, "message", "") or "")
        cause = exc.__cause__   # newer typer converts with pydantic: its error says what and which input
        first = cause.errors()[0] if callable(getattr(cause, "errors", None)) and cause.errors() else {}
        value = first.get("input", detail.split("'")[1] if detail.count("'") >= 2 else None)
        kind = str(first.get("type", "")) or ("int_parsing" if "integer" in detail else
                                               "float_parsing" if "float" in detail else "")
        if value is not None and kind.startswith("int"):
            return _("Invalid value for {param}: {value!r} is not a whole number.").format(param=name, value=value)
        if value is not None and kind.startswith("float"):
            return _("Invalid value for {param}: {value!r} is not a number.").format(param=name, value=value)
        if value is not None:
            return _("Invalid value for {param}: {value!r}.").format(param=name, value=value)
        return _("Invalid value for {param}.").format(param=name)
    if "BadOptionUsage" in kinds:
        return _("Option {option} needs a value.").format(option=getattr(exc, "option_name", ""))
    if "BadArgumentUsage" in kinds or "extra argument" in str(exc.format_message()).lower():
        extra = re.findall(r"\(([^)]*)\)", str(exc.format_message()))
        return _("Unexpected argument: {detail}.").format(detail=extra[-1] if extra else "?")
    return _("The command line is not valid.")


def _usage_error(exc: Any) -> None:
    """A click usage error (unknown option, bad value, missing argument) as one line and a hint, like
    every other error (JSON on stdout under --json, always English there)."""
    from gpuplan.i18n import tr, use_lang

    ctx = getattr(exc, "ctx", None)
    path = str(getattr(ctx, "command_path", "") or "gpuplan").split()
    command = " ".join(["gpuplan", *path[1:]])
    as_json = "--json" in sys.argv[1:]
    lang = "en" if as_json else _argv_lang()
    if lang == "en":
        message = " ".join(str(exc.format_message()).split())
    else:
        with use_lang(lang):
            try:
                message = _usage_message(exc)
            except Exception:  # noqa: BLE001 - an unknown click version: its own wording
                message = " ".join(str(exc.format_message()).split())
    hint = tr("See `{command} --help`.", lang).format(command=command)
    if as_json:
        _emit_json({"error": message, "hint": hint})
    else:
        sys.stderr.write(f"{tr('Error', lang)}: {message}\n{tr('Hint', lang)}: {hint}\n")
