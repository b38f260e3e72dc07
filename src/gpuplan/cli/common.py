"""The CLI's shared parts: the typer app, the common options, JSON output and the error guard every command
runs in (a GpuplanError becomes one line and a hint, exit code 2)."""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from gpuplan import __version__
from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help=N_("Plan cloud GPU instances (Alibaba Cloud first) for training and serving models."))
catalog_app = typer.Typer(no_args_is_help=True, help=N_("Bundled and refreshed catalog data."))
app.add_typer(catalog_app, name="catalog")

JsonOpt = Annotated[bool, typer.Option("--json", help=N_("Machine-readable JSON on stdout."))]
LangOpt = Annotated[Optional[str], typer.Option("--lang", help=N_("zh or en (default: from the locale)."))]
WideOpt = Annotated[bool, typer.Option("--wide", help=N_("Every table column, however wide the terminal."))]


# `gpuplan --lang zh COMMAND`: the language given before the command, for every command that has no --lang of
# its own (reset by main() for each command line).
ROOT_LANG: list[str | None] = [None]


class _Exit(Exception):
    def __init__(self, code: int):
        self.code = code


def _lang(lang: str | None) -> str:
    from gpuplan.i18n import default_lang

    if lang is None:
        lang = ROOT_LANG[0]
    if lang is None:
        return default_lang()
    low = lang.lower()
    if low not in ("zh", "en", "zh-cn", "zh_cn"):
        raise GpuplanError(_("Unknown language {lang!r}.").format(lang=lang), hint=_("Use --lang zh or --lang en."))
    return "zh" if low.startswith("zh") else "en"


def _console() -> Console:
    """The terminal's width; COLUMNS when set (also when piped); 160 for a pipe without COLUMNS. Numbers and
    strings are highlighted only where colours are written: without them the highlighter's styles print nothing,
    and its regular expressions cost a cold `estimate` about 2 % of its run. No ``:name:`` emoji codes: gpuplan's
    own text has none (tests/cli/test_console.py), so they could only rewrite a name the user typed, and rich's
    table of them costs a cold `estimate` about 1 %."""
    probe = Console()
    return Console(soft_wrap=False, width=probe.width if probe.is_terminal or os.environ.get("COLUMNS") else 160,
                   highlight=probe.color_system is not None, emoji=False)


def _emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, default=_json_default) + "\n")


def _json_default(o: Any) -> Any:
    from gpuplan.schemas import json_default

    return json_default(o)


def _fail(err: GpuplanError, as_json: bool, lang: str = "en") -> None:
    from rich.markup import escape

    from gpuplan.i18n import tr

    if as_json:
        _emit_json(err.to_dict("cli"))
    else:
        err_console = Console(stderr=True, soft_wrap=True, emoji=False)  # one line per message, never wrapped
        err_console.print(f"[bold red]{tr('Error', lang)}:[/bold red] {escape(err.message)}", highlight=False, markup=True)
        hint = err.hint_for("cli")
        if hint:
            err_console.print(f"[yellow]{tr('Hint', lang)}:[/yellow] {escape(hint)}", highlight=False)
    raise _Exit(2)


def run_guarded(fn, as_json: bool, lang_opt: str | None):
    """Run a command body; turn GpuplanError into one line + hint and exit code 2."""
    from gpuplan.i18n import use_lang, use_surface

    lang = "en"
    try:
        lang = _lang(lang_opt)
        # JSON values never change with --lang: messages made deep inside (`_()`) stay English there.
        with use_lang("en" if as_json else lang), use_surface("cli"):
            return fn(lang)
    except GpuplanError as err:
        _fail(err, as_json, lang)


def _version_cb(value: bool) -> None:
    if value:
        typer.echo(f"gpuplan {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[Optional[bool], typer.Option("--version", callback=_version_cb, is_eager=True,
                                                          help=N_("Show the version and exit."))] = None,
          lang: Annotated[Optional[str], typer.Option("--lang", help=N_("zh or en for every command (default: from "
                                                                         "the locale)."))] = None) -> None:
    ROOT_LANG[0] = lang
