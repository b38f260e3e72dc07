"""`--help` in the language of the command line: `--lang` anywhere on it (`gpuplan --lang zh --help`,
`gpuplan estimate --help --lang zh`), else the locale (LANG=zh_CN.UTF-8).

The commands' and options' help texts are catalog msgids (`help=N_("...")`), so the click command tree typer
builds is translated before click formats it; the few words click adds itself ("Usage:", "Options:",
"[default: 5]", "Show this message and exit.") are translated in the formatted text. `gpuplan` and
`gpuplan catalog` without a command print the same help.
"""

from __future__ import annotations

import re
from typing import Any

from gpuplan.i18n import N_, tr

# click's own words in a help page (the same in every click release typer has used).
_FIXED = (N_("Usage:"), N_("Options:"), N_("Commands:"), N_("Arguments:"), N_("Show this message and exit."),
          N_("[required]"))
_DEFAULT = re.compile(r"\[default:\s+([^\]]*)\]")
_DEFAULT_MSGID = N_("[default: {value}]")


def wants_help(args: list[str]) -> bool:
    """True for `--help` (before a `--`), and for a command line that names no command (`gpuplan`, `gpuplan
    --lang zh`, `gpuplan catalog`)."""
    from gpuplan.cli.common import app

    words = args[:args.index("--")] if "--" in args else args
    if "--help" in words:
        return True
    if "--version" in words:
        return False
    named = [a for i, a in enumerate(words) if not a.startswith("-") and not (i and words[i - 1] == "--lang")]
    groups = {g.name for g in app.registered_groups}
    return not named or (len(named) == 1 and named[0] in groups)


def _group_commands(cmd: Any) -> dict[str, Any]:
    return dict(getattr(cmd, "commands", None) or {})


def _translate(cmd: Any, lang: str) -> None:
    """Translate the help of ``cmd``, its parameters and its sub-commands (in place: one process, one language)."""
    if getattr(cmd, "help", None):
        cmd.help = tr(cmd.help, lang)
    if getattr(cmd, "short_help", None):
        cmd.short_help = tr(cmd.short_help, lang)
    for param in getattr(cmd, "params", ()) or ():
        if getattr(param, "help", None):
            param.help = tr(param.help, lang)
    for sub in _group_commands(cmd).values():
        _translate(sub, lang)


def _takes_value(cmd: Any, word: str) -> bool:
    name = word.split("=", 1)[0]
    for param in getattr(cmd, "params", ()) or ():
        if name in (getattr(param, "opts", ()) or ()) and not getattr(param, "is_flag", False):
            return "=" not in word
    return False


def help_text(args: list[str], lang: str) -> str:
    """The help page of the command that ``args`` names, in ``lang``."""
    import typer.main

    from gpuplan.cli.common import app

    root = typer.main.get_command(app)
    _translate(root, lang)
    cmd, ctx = root, root.make_context("gpuplan", [], resilient_parsing=True)
    words = args[:args.index("--")] if "--" in args else list(args)
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("-"):
            i += 2 if _takes_value(cmd, word) else 1
            continue
        sub = _group_commands(cmd).get(word)
        if sub is not None:
            cmd = sub
            ctx = cmd.make_context(word, [], parent=ctx, resilient_parsing=True)
        i += 1
    text = ctx.get_help().rstrip("\n") + "\n"
    if lang == "en":
        return text
    for msgid in _FIXED:
        text = text.replace(msgid, tr(msgid, lang))
    return _DEFAULT.sub(lambda m: tr(_DEFAULT_MSGID, lang).format(value=m.group(1)), text)
