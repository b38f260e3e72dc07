"""pydantic's validation errors as one GpuplanError: the field, the value, what it must be, a did-you-mean for
an unknown key, and (outside English) our own translated sentences."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from gpuplan.errors import GpuplanError, did_you_mean
from gpuplan.i18n import N_, _, current_lang

# The tasks, as the refusal of an unknown or ambiguous task word lists them (gpuplan.workload.read_task too).
TASK_CHOICES = N_("pretrain (train from scratch), full (fine-tune every weight), lora or qlora (adapters), "
                  "inference (serve)")

# pydantic's error types -> our sentences (its own messages are English-only).
_PYDANTIC_MESSAGES = {
    "greater_than": N_("Invalid workload field {field!r} = {shown}: it must be greater than {gt}."),
    "greater_than_equal": N_("Invalid workload field {field!r} = {shown}: it must be at least {ge}."),
    "less_than": N_("Invalid workload field {field!r} = {shown}: it must be less than {lt}."),
    "less_than_equal": N_("Invalid workload field {field!r} = {shown}: it must be at most {le}."),
    "literal_error": N_("Invalid workload field {field!r} = {shown}: it must be one of {expected}."),
    "int_parsing": N_("Invalid workload field {field!r} = {shown}: it must be a whole number."),
    "int_type": N_("Invalid workload field {field!r} = {shown}: it must be a whole number."),
    "int_from_float": N_("Invalid workload field {field!r} = {shown}: it must be a whole number."),
    "float_parsing": N_("Invalid workload field {field!r} = {shown}: it must be a number."),
    "float_type": N_("Invalid workload field {field!r} = {shown}: it must be a number."),
    "finite_number": N_("Invalid workload field {field!r} = {shown}: it must be a finite number."),
    "bool_parsing": N_("Invalid workload field {field!r} = {shown}: it must be true or false."),
    "bool_type": N_("Invalid workload field {field!r} = {shown}: it must be true or false."),
    "string_type": N_("Invalid workload field {field!r} = {shown}: it must be a text value."),
    "dict_type": N_("Invalid workload field {field!r} = {shown}: it must be a mapping of keys."),
    "model_type": N_("Invalid workload field {field!r} = {shown}: it must be a mapping of keys."),
    "list_type": N_("Invalid workload field {field!r} = {shown}: it must be a list."),
    "too_short": N_("Invalid workload field {field!r} = {shown}: it needs at least {min_length} item(s)."),
    "too_long": N_("Invalid workload field {field!r} = {shown}: it takes at most {max_length} item(s)."),
    "string_too_long": N_("Invalid workload field {field!r} = {shown}: it takes at most {max_length} characters."),
}


def friendly_error(exc: ValidationError, root: type[BaseModel], prefix: str = "") -> GpuplanError:
    """The first error of ``exc`` (raised validating ``root``, e.g. Workload) as a GpuplanError."""
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err.get("loc", ()))
    kind = err.get("type", "")
    field = (prefix + loc) if loc else prefix.rstrip(".") or None
    if kind == "extra_forbidden":
        parent_model = _model_at(root, err.get("loc", ())[:-1])
        key = str(err["loc"][-1])
        known = list(parent_model.model_fields) if parent_model else []
        close = did_you_mean(key, known)
        if close:
            hint = _("Did you mean {key!r}? `gpuplan schema` lists every key.").format(key=close[0])
            web_hint = _("Did you mean {key!r}?").format(key=close[0])
        else:
            hint = _("Known keys: {keys}. `gpuplan schema` lists every key.").format(keys=", ".join(known))
            web_hint = _("Known keys: {keys}.").format(keys=", ".join(known))
        return GpuplanError(_("Unknown workload key {field!r}.").format(field=field), hint=hint, web_hint=web_hint,
                            field=field)
    msg = err.get("msg", "invalid value")
    if msg.startswith("Value error, "):   # our validators' own (translated) sentences
        msg = msg[len("Value error, "):]
    value = err.get("input")
    shown = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    if len(shown) > 60:
        shown = shown[:57] + "..."
    if kind == "missing":
        return GpuplanError(_("Workload field {field!r} is required.").format(field=field),
                            hint=_("Add it, e.g. `model: Qwen/Qwen2.5-7B-Instruct`."), field=field)
    hint = _("See `gpuplan schema` for allowed values and ranges.")
    web_hint = _("Check the value against the field's allowed values and ranges.")
    if field == "task":
        hint = web_hint = _("Choose one: {choices}.").format(choices=_(TASK_CHOICES))
    ctx = {k: (v if not isinstance(v, float) or not v.is_integer() else int(v)) for k, v in (err.get("ctx") or {}).items()}
    expected = ctx.get("expected")
    if current_lang() != "en" and isinstance(expected, str):   # pydantic's "'a', 'b' or 'c'", translated
        ctx["expected"] = expected.replace(" or ", _(" or "))
    # English keeps pydantic's own wording (a stable contract); other languages get our templates.
    template = _PYDANTIC_MESSAGES.get(kind) if current_lang() != "en" else None
    if kind == "literal_error":
        hint = web_hint = _("Allowed: {expected}.").format(expected=msg.split("Input should be ", 1)[-1]
                                                           if current_lang() == "en" else ctx.get("expected", ""))
    if field is None:
        # a rule across fields (the workload validators' own sentence names them): no one field or value to quote
        return GpuplanError(_("Invalid workload: {exc}.").format(exc=msg.rstrip(".")), hint=hint, web_hint=web_hint)
    if template:
        try:
            message = _(template).format(field=field, shown=shown, **ctx)
        except (KeyError, IndexError, ValueError):
            message = _("Invalid workload field {field!r} = {shown}: {msg}.").format(field=field, shown=shown, msg=msg)
    else:
        message = _("Invalid workload field {field!r} = {shown}: {msg}.").format(field=field, shown=shown, msg=msg)
    return GpuplanError(message, hint=hint, web_hint=web_hint, field=field)


def _model_at(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    cur: Any = model
    for part in loc:
        if not (isinstance(cur, type) and issubclass(cur, BaseModel)):
            return None
        fld = cur.model_fields.get(str(part))
        if fld is None:
            return None
        ann = fld.annotation
        cur = _first_model(ann)
    return cur if isinstance(cur, type) and issubclass(cur, BaseModel) else None


def _first_model(ann: Any) -> Any:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in getattr(ann, "__args__", ()) or ():
        found = _first_model(arg)
        if found is not None:
            return found
    return None
