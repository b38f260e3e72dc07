"""Resolve a Hugging Face / ModelScope model id that the bundled library does not know.

Opt-in: nothing here touches the network unless ``GPUPLAN_ONLINE=1`` is set (or a caller passes
``online=True``). Then the id's ``config.json`` is fetched once through a *fetcher* (the network
seam: any ``Callable[[str], bytes | str]``; tests inject a fake), stored in the gpuplan cache
folder (``$GPUPLAN_CACHE_DIR/hub/``), and parsed with ``from_hf_config``. A cached config is used
offline too. The resulting ModelSpec says where its shape came from in ``assumptions``.

Offline (the default) with nothing cached, :func:`resolve_remote` returns None and the library
raises its usual "unknown model" error (naming the closest known models) with :func:`offline_hint`;
the bundled library is never bypassed: a known id never hits the network. This module does not
import the library (gpuplan.catalog.library imports it), so the two form no import cycle.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from gpuplan.catalog.hf_config import from_hf_config
from gpuplan.catalog.model_spec import ModelSpec
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _

ONLINE_ENV = "GPUPLAN_ONLINE"
HF_ENDPOINT_ENV = "HF_ENDPOINT"  # the variable huggingface_hub honours (e.g. a mirror)
Fetcher = Callable[[str], "bytes | str"]

# "org/name" with the characters the Hub allows; an optional "hf:" / "modelscope:" / "ms:" prefix.
_REPO = re.compile(r"^(?:(hf|huggingface|modelscope|ms):)?([A-Za-z0-9][\w.-]{0,95})/([\w.-]{1,96})$")
_MAX_BYTES = 2 * 1024 * 1024  # a config.json is a few KiB; refuse anything absurd


def online_enabled() -> bool:
    """Whether online resolution is switched on (``GPUPLAN_ONLINE`` = 1 / true / yes / on)."""
    return os.environ.get(ONLINE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def parse_repo_id(ref: str) -> tuple[str, str] | None:
    """(hub, 'org/name') for a reference that looks like a hub id, else None. hub: 'hf' or 'modelscope'."""
    m = _REPO.match(ref.strip())
    if not m or ".." in ref:
        return None
    prefix = (m.group(1) or "hf").lower()
    hub = "modelscope" if prefix in ("modelscope", "ms") else "hf"
    return hub, f"{m.group(2)}/{m.group(3)}"


def config_url(hub: str, repo: str) -> str:
    """Where a repo's config.json is downloaded from (main branch / master revision)."""
    if hub == "modelscope":
        return f"https://modelscope.cn/api/v1/models/{repo}/repo?Revision=master&FilePath=config.json"
    base = os.environ.get(HF_ENDPOINT_ENV, "https://huggingface.co").rstrip("/")
    return f"{base}/{repo}/resolve/main/config.json"


def cache_path(hub: str, repo: str, cache_dir: str | os.PathLike | None = None) -> Path:
    from gpuplan.catalog.instances import default_cache_dir

    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return root / "hub" / hub / (repo.replace("/", "__") + ".json")


def urllib_fetcher(url: str, timeout_s: float = 15.0) -> bytes:
    """The default fetcher: one HTTPS GET (a token in HF_TOKEN is sent for gated repos)."""
    import urllib.request   # only when fetching: urllib.request costs a cold start 60 ms

    req = urllib.request.Request(url, headers={"User-Agent": "gpuplan"})
    token = os.environ.get("HF_TOKEN")
    if token and "huggingface" in url:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:
        return resp.read(_MAX_BYTES + 1)


def _decode(raw: bytes | str, url: str) -> dict:
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    if len(text) > _MAX_BYTES:
        raise GpuplanError(_("The config.json at {url} is larger than 2 MiB; not a model config.").format(url=url), hint=_("Download the config.json and pass its path as the model instead."), field="model")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GpuplanError(_("The config.json at {url} is not valid JSON ({msg}).").format(url=url, msg=exc.msg), hint=_("Download the config.json and pass its path as the model instead."), field="model") from None
    if isinstance(data, dict) and isinstance(data.get("Data"), (str, dict)) and "model_type" not in data:
        inner = data["Data"]  # ModelScope's file API wraps the file
        data = json.loads(inner) if isinstance(inner, str) else inner
    if not isinstance(data, dict):
        raise GpuplanError(_("The config.json at {url} is not a JSON object.").format(url=url), hint=_("Download the config.json and pass its path as the model instead."), field="model")
    return data


def offline_hint(ref: str) -> str:
    """The sentence that says how to let gpuplan read an unknown hub id (added to the unknown-model hint)."""
    parsed = parse_repo_id(ref)
    hub, repo = parsed if parsed is not None else ("hf", ref)
    return (_("gpuplan is offline by default: set {env}=1 to fetch {repo}'s config.json from ModelScope, "
              "or pass a local config.json path.") if hub == "modelscope" else
            _("gpuplan is offline by default: set {env}=1 to fetch {repo}'s config.json from the Hugging Face "
              "Hub, or pass a local config.json path.")).format(env=ONLINE_ENV, repo=repo)


def resolve_remote(ref: str, *, fetcher: Fetcher | None = None, cache_dir: str | os.PathLike | None = None,
                   online: bool | None = None) -> ModelSpec | None:
    """A ModelSpec for a hub id the library lacks: from the cache, else (online only) from the hub.

    None when ``ref`` is not a hub id, or when offline with nothing cached (the caller raises its
    unknown-model error with :func:`offline_hint`). Raises GpuplanError when the download or the
    config fails (the message names the URL)."""
    parsed = parse_repo_id(ref)
    if parsed is None:
        return None
    hub, repo = parsed
    url = config_url(hub, repo)
    path = cache_path(hub, repo, cache_dir)
    note: str
    if path.is_file():
        cfg = _decode(path.read_bytes(), str(path))
        note = _("shape from {repo}'s config.json cached at {path} (downloaded earlier from {url})").format(
            repo=repo, path=path, url=url)
    else:
        if not (online if online is not None else online_enabled()):
            return None
        try:
            raw = (fetcher or urllib_fetcher)(url)
        except (OSError, TimeoutError) as exc:   # urllib's URLError is an OSError
            raise GpuplanError(_("Could not download {url}: {exc}.").format(url=url, exc=exc),
                               hint=_("Check the model id and the network, set HF_TOKEN for gated repos, or pass a "
                                      "local config.json path. Unset {env} to use the bundled library only.").format(
                                   env=ONLINE_ENV),
                               field="model") from None
        cfg = _decode(raw, url)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(cfg, indent=1, sort_keys=True), encoding="utf-8")
        tmp.replace(path)
        day = datetime.now(timezone.utc).date().isoformat()
        note = _("shape from {repo}'s config.json downloaded from {url} on {day} (not in the bundled library)").format(
            repo=repo, url=url, day=day)
    spec = from_hf_config(cfg, name=repo)
    return replace(spec, source=url, assumptions=(note, *spec.assumptions))
