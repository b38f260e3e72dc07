"""Resolve a Hugging Face / ModelScope model id that the bundled library does not know.

Where the network allows: an id the library lacks has its ``config.json`` (or, for a diffusers pipeline,
``model_index.json`` and its components' configs) fetched once through a *fetcher* (the network seam:
any ``Callable[[str], bytes | str]``; tests inject a fake), with a short timeout, stored in the gpuplan
cache folder (``$GPUPLAN_CACHE_DIR/hub/``) and parsed with ``from_hf_config``. A cached config is used
offline too. The resulting ModelSpec says where its shape came from in ``assumptions``.

Which hub: an ``hf:`` / ``modelscope:`` (``ms:``) prefix names one; otherwise ModelScope first when the
workload's region is in the Chinese mainland (catalog/hardware/regions.is_mainland: Hugging Face is not reachable
there), Hugging Face first elsewhere (``$HF_ENDPOINT`` honoured, e.g. hf-mirror.com), the other one second;
``GPUPLAN_HUB=hf|modelscope`` overrides the order.

Switches: ``GPUPLAN_OFFLINE=1`` (or ``GPUPLAN_ONLINE=0``) never touches the network; ``GPUPLAN_ONLINE=1``
makes a failed download an error instead of the usual "unknown model" answer. With neither set, a fetch
that cannot reach the hub is not an error: the library raises its "unknown model" error (closest known
models, how to give a config) and says the hub could not be reached. A bundled id never hits the network.
This module does not import the library (gpuplan.catalog.library imports it), so the two form no cycle.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gpuplan.catalog.configs.hf_config import from_hf_config
from gpuplan.catalog.model_spec import ModelSpec
from gpuplan.errors import GpuplanError
from gpuplan.i18n import _

ONLINE_ENV = "GPUPLAN_ONLINE"
OFFLINE_ENV = "GPUPLAN_OFFLINE"
HUB_ENV = "GPUPLAN_HUB"            # hf | modelscope: which hub to ask first
TIMEOUT_ENV = "GPUPLAN_HUB_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 5.0
HF_ENDPOINT_ENV = "HF_ENDPOINT"  # the variable huggingface_hub honours (e.g. a mirror)
HUBS = ("hf", "modelscope")
HUB_NAMES = {"hf": "Hugging Face", "modelscope": "ModelScope"}
Fetcher = Callable[[str], "bytes | str"]

# "org/name" with the characters the Hub allows; an optional "hf:" / "modelscope:" / "ms:" prefix.
_REPO = re.compile(r"^(?:(hf|huggingface|modelscope|ms):)?([A-Za-z0-9][\w.-]{0,95})/([\w.-]{1,96})$")
_MAX_BYTES = 2 * 1024 * 1024  # a config.json is a few KiB; refuse anything absurd
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _env(name: str) -> str:
    return os.environ.get(name, "").strip().lower()


def online_enabled() -> bool:
    """Whether gpuplan may ask a hub: not when ``GPUPLAN_OFFLINE`` is true or ``GPUPLAN_ONLINE`` false."""
    return _env(OFFLINE_ENV) not in _TRUE and _env(ONLINE_ENV) not in _FALSE


def online_required() -> bool:
    """``GPUPLAN_ONLINE=1``: a failed download is an error, not a fall-back to the unknown-model answer."""
    return _env(ONLINE_ENV) in _TRUE and _env(OFFLINE_ENV) not in _TRUE


def timeout_s() -> float:
    try:
        value = float(os.environ.get(TIMEOUT_ENV, DEFAULT_TIMEOUT_S))
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if 0 < value <= 120 else DEFAULT_TIMEOUT_S


def parse_repo_id(ref: str) -> tuple[str, str] | None:
    """(hub, 'org/name') for a reference that looks like a hub id, else None. hub: 'hf', 'modelscope', or
    '' when no prefix names one (then :func:`hub_order` decides)."""
    m = _REPO.match(ref.strip())
    if not m or ".." in ref:
        return None
    prefix = (m.group(1) or "").lower()
    hub = "modelscope" if prefix in ("modelscope", "ms") else ("hf" if prefix else "")
    return hub, f"{m.group(2)}/{m.group(3)}"


def hub_order(named: str, region: str | None = None) -> tuple[str, ...]:
    """The hubs to ask, in order: the one a prefix names; else ``GPUPLAN_HUB``; else ModelScope first for a
    mainland-China region and Hugging Face first elsewhere (or when ``HF_ENDPOINT`` names a mirror)."""
    if named:
        return (named,)
    first = _env(HUB_ENV)
    if first not in HUBS:
        from gpuplan.catalog.hardware.regions import is_mainland

        first = "modelscope" if is_mainland(region) and not os.environ.get(HF_ENDPOINT_ENV) else "hf"
    return (first, *(h for h in HUBS if h != first))


def file_url(hub: str, repo: str, path: str = "config.json") -> str:
    """Where one file of a repo is downloaded from (main branch / master revision)."""
    if hub == "modelscope":
        return f"https://modelscope.cn/api/v1/models/{repo}/repo?Revision=master&FilePath={path}"
    base = os.environ.get(HF_ENDPOINT_ENV, "https://huggingface.co").rstrip("/")
    return f"{base}/{repo}/resolve/main/{path}"


def config_url(hub: str, repo: str) -> str:
    return file_url(hub or "hf", repo)


def cache_path(hub: str, repo: str, cache_dir: str | os.PathLike | None = None, path: str = "config.json") -> Path:
    from gpuplan.catalog.hardware.instances import default_cache_dir

    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    stem = repo.replace("/", "__")
    name = stem + ".json" if path == "config.json" else f"{stem}__{path.replace('/', '__')}"
    return root / "hub" / hub / name


def urllib_fetcher(url: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> bytes:
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


def offline_hint(ref: str, failures: list[str] | None = None, hint: str = "") -> str:
    """``hint`` (the unknown-model hint) followed by why gpuplan could not read the hub id and how to let it."""
    parsed = parse_repo_id(ref)
    repo = parsed[1] if parsed is not None else ref
    if failures:
        return _("{hint} Its config.json could not be fetched ({why}); with the network reachable gpuplan fetches it "
                 "itself.").format(hint=hint, why="; ".join(failures))
    if not online_enabled():
        return _("{hint} gpuplan is offline ({env}): unset it to let gpuplan fetch {repo}'s config.json from Hugging "
                 "Face or ModelScope.").format(
            hint=hint, env=OFFLINE_ENV + "=1" if _env(OFFLINE_ENV) in _TRUE else ONLINE_ENV + "=0", repo=repo)
    return hint


class _NotThere(Exception):
    """The hub answered, but has no such file (HTTP 404)."""


def _fetch_json(hub: str, repo: str, path: str, fetcher: Fetcher, cache_dir) -> tuple[dict, str, bool]:
    """(parsed file, its URL, from the cache) for one file of a repo."""
    url = file_url(hub, repo, path)
    cached = cache_path(hub, repo, cache_dir, path)
    if cached.is_file():
        return _decode(cached.read_bytes(), str(cached)), url, True
    import urllib.error   # only when fetching (urllib is off the cold path)

    try:
        raw = fetcher(url)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise _NotThere(url) from None
        raise
    data = _decode(raw, url)
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(cached)
    return data, url, False


def _cached_hub(repo: str, hubs: tuple[str, ...], cache_dir) -> str | None:
    """The first of ``hubs`` whose config (or pipeline index) of ``repo`` is in the cache."""
    for hub in hubs:
        if any(cache_path(hub, repo, cache_dir, p).is_file() for p in ("config.json", "model_index.json")):
            return hub
    return None


def _offline_fetcher(url: str) -> bytes:
    raise OSError(_("offline"))


def _spec_from_hub(hub: str, repo: str, fetcher: Fetcher, cache_dir) -> tuple[ModelSpec, str, bool]:
    try:
        cfg, url, cached = _fetch_json(hub, repo, "config.json", fetcher, cache_dir)
    except _NotThere:
        index, url, cached = _fetch_json(hub, repo, "model_index.json", fetcher, cache_dir)
        from gpuplan.catalog.nonllm.diffusers import pipeline_spec

        def read(rel: str) -> Mapping[str, Any] | None:
            try:
                return _fetch_json(hub, repo, rel, fetcher, cache_dir)[0]
            except _NotThere:
                return None

        return pipeline_spec(index, read, repo, source=url), url, cached
    return from_hf_config(cfg, name=repo), url, cached


def resolve_remote(ref: str, *, fetcher: Fetcher | None = None, cache_dir: str | os.PathLike | None = None,
                   online: bool | None = None, region: str | None = None,
                   failures: list[str] | None = None) -> ModelSpec | None:
    """A ModelSpec for a hub id the library lacks: from the cache, else from the hubs (:func:`hub_order`).

    None when ``ref`` is not a hub id, when offline with nothing cached, or when no hub could be reached and
    ``GPUPLAN_ONLINE=1`` is not set (each failure is appended to ``failures``: the caller's unknown-model error
    says it). Raises GpuplanError when a config is malformed, or when a download fails under ``GPUPLAN_ONLINE=1``."""
    parsed = parse_repo_id(ref)
    if parsed is None:
        return None
    named, repo = parsed
    allowed = online if online is not None else online_enabled()
    required = online is True or (online is None and online_required())
    hubs = hub_order(named, region)
    cached = _cached_hub(repo, hubs, cache_dir)
    if cached is not None:
        hubs = (cached,)
    elif not allowed:
        return None
    get = (fetcher or (lambda url: urllib_fetcher(url, timeout_s=timeout_s()))) if allowed else _offline_fetcher
    errors: list[str] = []
    for hub in hubs:
        try:
            spec, url, from_cache = _spec_from_hub(hub, repo, get, cache_dir)
        except _NotThere as exc:
            errors.append(_("{hub}: no config.json or model_index.json at {url}").format(hub=HUB_NAMES[hub], url=exc))
            continue
        except (OSError, TimeoutError) as exc:   # urllib's URLError is an OSError
            errors.append(_("{hub}: {exc}").format(hub=HUB_NAMES[hub], exc=getattr(exc, "reason", exc)))
            continue
        if from_cache:
            path = next((p for p in (cache_path(hub, repo, cache_dir, f) for f in ("config.json", "model_index.json"))
                         if p.is_file()), cache_path(hub, repo, cache_dir))
            note = _("shape from {repo}'s config cached at {path} (downloaded earlier from {url})").format(
                repo=repo, path=path, url=url)
        else:
            day = datetime.now(timezone.utc).date().isoformat()
            note = _("shape from {repo}'s config downloaded from {url} on {day} (not in the bundled library)").format(
                repo=repo, url=url, day=day)
        return replace(spec, source=url, assumptions=(note, *spec.assumptions))
    if errors and required:
        raise GpuplanError(_("Could not download {repo}'s config: {why}.").format(repo=repo, why="; ".join(errors)),
                           hint=_("Check the model id and the network, set HF_TOKEN for gated repos, or pass a local "
                                  "config.json path. Unset {env} to fall back to the bundled library.").format(
                               env=ONLINE_ENV), field="model")
    if failures is not None:
        failures.extend(errors)
    return None
