"""The `gpuplan` command line: thin typer commands over the Python API.

Every command takes `--json` (machine output, stable keys) and `--lang zh|en` (human text only).
User errors print one line and a hint and exit 2 (JSON: {"error", "hint"} on stdout); never a
traceback (set GPUPLAN_DEBUG=1 to see one). Heavy modules are imported inside the commands so
that `gpuplan gpus` starts fast and never imports torch.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

# Importing a command module registers its commands on `app`; --help lists them in import order.
from gpuplan.cli import listing, planning, machine, bundle, check, frontends  # noqa: F401  (keep this order)
from gpuplan.cli.common import _Exit, app
from gpuplan.cli.help import help_text, wants_help
from gpuplan.cli.usage import _argv_lang, _usage_error
from gpuplan.i18n import _


def _skip_plugin_loader() -> None:
    """With plugins disabled, pydantic's plugin loader returns no plugins, yet importing it imports
    importlib.metadata (the email package and more: 50-200 ms of a cold `estimate`). Stand in for that module
    with one that answers the same, when it is the module this pydantic has (checked in its source, without
    importing pydantic) and the environment disables every plugin."""
    import importlib.util
    import types

    name = "pydantic.plugin._loader"
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") not in ("1", "true", "__all__") or name in sys.modules:
        return
    spec = importlib.util.find_spec("pydantic")
    origin = spec.origin if spec is not None else None
    if not origin:
        return
    try:
        source = (Path(origin).parent / "plugin" / "_loader.py").read_text(encoding="utf-8")
    except OSError:
        return
    if "def get_plugins()" not in source or "'PYDANTIC_DISABLE_PLUGINS'" not in source:
        return
    stub = types.ModuleType(name)
    vars(stub)["get_plugins"] = lambda: ()   # what the real loader returns when plugins are disabled
    sys.modules[name] = stub


def main() -> None:
    """Console-script entry point."""
    # pydantic looks for plugins in every installed distribution's entry points when it builds its first
    # validator (typer's option parsing and the workload model): 50 ms of a cold start that gpuplan, which
    # uses no pydantic plugin, never needs. An explicit setting in the environment is kept.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")
    _skip_plugin_loader()
    from gpuplan.cli import fastclasses

    fastclasses.install()   # dataclasses made from here on compile only their __init__ (gpuplan/cli/fastclasses.py)
    from gpuplan.cli import common

    common.ROOT_LANG[0] = None
    args = sys.argv[1:]
    if wants_help(args):    # in the language of the command line, which click's own help cannot do
        try:
            sys.stdout.write(help_text(args, _argv_lang()))
        except BrokenPipeError:   # pragma: no cover - `gpuplan --help | head`
            pass
        sys.exit(0)
    from gpuplan.cli.fastparams import install

    install()   # no pydantic validator built for an option that was not given
    try:
        app(args=args, prog_name="gpuplan", standalone_mode=False)
    except _Exit as e:
        sys.exit(e.code)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.stderr.write(_("Interrupted.") + "\n")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the last guard: never a traceback for users
        # Usage errors (unknown option, missing argument) come from click, or from the copy of click that
        # newer typer releases vendor: recognise them by their interface rather than their module.
        code = getattr(exc, "exit_code", None)
        if callable(getattr(exc, "format_message", None)) and isinstance(code, int):
            _usage_error(exc)
            sys.exit(code if code != 1 else 2)
        if type(exc).__name__ == "Abort":
            sys.exit(1)
        if os.environ.get("GPUPLAN_DEBUG"):
            raise
        from gpuplan.i18n import tr

        lang = _argv_lang()
        sys.stderr.write(tr("Internal error: {name}: {detail}", lang).format(name=exc.__class__.__name__, detail=exc)
                         + "\n" + tr("Hint", lang) + ": "
                         + tr("this is a bug in gpuplan; rerun with GPUPLAN_DEBUG=1 and report the traceback.", lang)
                         + "\n")
        sys.exit(3)
