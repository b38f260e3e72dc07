"""The Jinja2 environment of the bundle: strict undefined, the escaping filters and the guard."""

from __future__ import annotations

import functools
from typing import Any

import jinja2

from gpuplan.render.bundle.safe import guard, hcl, inert, md, sh


@functools.cache
def environment() -> jinja2.Environment:
    """Templates under ``gpuplan/render/templates/bundle`` (loaded lazily, once)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("gpuplan.render", "templates/bundle"),
        undefined=jinja2.StrictUndefined,
        finalize=guard,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(sh=sh, hcl=hcl, md=md, inert=inert)
    return env


def render(name: str, **values: Any) -> str:
    """Render one template; every printed value passes :func:`guard`."""
    return environment().get_template(name).render(**values)
