"""Weights fetched once, in-region, and used: every launcher loads the local copy ``fetch-model.sh`` writes
(``MODEL_DIR``) instead of naming a hub repository the engine would download at start.

- shell launchers (serve.sh, serve-sglang.sh, launch.sh, swift-sft.sh) switch MODEL to MODEL_DIR and pass no
  literal ``org/name`` repository to ``--model`` (nor ``--use_hf true``);
- the Kubernetes Deployment's engine loads a path, not a repository id;
- Python servers (serve_images.py, transcribe.py, generate_images.py) read MODEL_DIR;
- the platform definitions (Function Compute s.yaml, PAI-EAS service.json, PAI-DLC job, ACK Job) set MODEL_DIR.
"""

from __future__ import annotations

import re

from gpuplan.check.bundle import Bundle, Finding
from gpuplan.check.locate import yaml_line
from gpuplan.i18n import _

SHELL_LAUNCHERS = ("serve.sh", "serve-sglang.sh", "launch.sh", "swift-sft.sh")
PY_SERVERS = ("serve_images.py", "transcribe.py", "generate_images.py")
USES_DIR = re.compile(r"""MODEL=["']?\$\{?MODEL_DIR\b""")
REPO_ARG = re.compile(r"""--model(?:[_-](?:path|id|id_or_path|name_or_path))?(?:=|\s+)["']?(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)""")
USE_HF = re.compile(r"--use_hf\s+(?:true|True|1)\b")


def _repo_findings(b: Bundle, rel: str) -> list[Finding]:
    out = []
    for i, line in enumerate(b.lines(rel), 1):
        if line.lstrip().startswith("#"):
            continue
        m = REPO_ARG.search(line)
        if m and not m.group("repo").startswith(("/", ".")):
            out.append(Finding(rel, i, "weights-hub", _(
                "The launcher names the hub repository {repo} instead of the local copy fetch-model.sh writes "
                "(MODEL_DIR): the engine would download the weights again, from the hub, at every start.").format(
                    repo=m.group("repo"))))
        if USE_HF.search(line):
            out.append(Finding(rel, i, "weights-hub", _(
                "--use_hf true downloads the weights from Hugging Face at start instead of loading MODEL_DIR.")))
    return out


def _env_names(container: dict) -> set[str]:
    return {str(e.get("name")) for e in container.get("env") or [] if isinstance(e, dict)}


def _k8s(b: Bundle) -> list[Finding]:
    out = []
    for rel in b.glob("k8s/*.yaml"):
        docs, _err = b.yaml_docs(rel)
        for i, doc in enumerate(d for d in docs if isinstance(d, dict)):
            if doc.get("kind") not in ("Deployment", "Job"):
                continue
            for j, c in enumerate(((doc.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or []):
                args = [str(a) for a in c.get("args") or []]
                command = [str(a) for a in c.get("command") or []]
                model = None
                if command[:2] == ["vllm", "serve"] and args:
                    model = args[0]
                elif "--model-path" in args and args.index("--model-path") + 1 < len(args):
                    model = args[args.index("--model-path") + 1]
                line = yaml_line(b.text(rel) or "", ["spec", "template", "spec", "containers", j, "args"], i)
                if model is not None and not model.startswith(("/", "$(")):
                    out.append(Finding(rel, line, "weights-hub", _(
                        "The {kind}'s engine loads {model} from the hub at every pod start; mount the weights (a "
                        "volume fetch-model.sh filled) and pass their path.").format(kind=doc["kind"], model=model)))
                elif model is None and "MODEL_DIR" not in _env_names(c):
                    out.append(Finding(rel, line, "weights-local", _(
                        "The {kind}'s container sets no MODEL_DIR: it cannot find the local copy of the weights.")
                        .format(kind=doc["kind"])))
    return out


def _platforms(b: Bundle) -> list[Finding]:
    out = []
    if b.has("function-compute/s.yaml"):
        docs, _err = b.yaml_docs("function-compute/s.yaml")
        for name, r in ((docs[0] or {}).get("resources") or {}).items() if docs and isinstance(docs[0], dict) else ():
            env = ((r or {}).get("props") or {}).get("environmentVariables") or {}
            if "MODEL_DIR" not in env:
                out.append(Finding("function-compute/s.yaml", yaml_line(
                    b.text("function-compute/s.yaml") or "", ["resources", name, "props", "environmentVariables"]),
                    "weights-local", _("The function sets no MODEL_DIR: every cold start downloads the weights from "
                                       "the hub instead of loading a staged copy (OSS or NAS mount).")))
    if b.has("pai-eas/service.json"):
        doc, _err = b.json("pai-eas/service.json")
        containers = (doc or {}).get("containers") or [] if isinstance(doc, dict) else []
        if not any("MODEL_DIR" in {e.get("name") for e in (c.get("env") or []) if isinstance(e, dict)}
                   or "MODEL_DIR" in str(c.get("script", "")) for c in containers):
            out.append(Finding("pai-eas/service.json", b.line_of("pai-eas/service.json", '"containers"'), "weights-local",
                               _("The EAS service sets no MODEL_DIR: every instance downloads the weights from the hub "
                                 "at start instead of loading a mounted copy.")))
    if b.has("pai-dlc-job.json"):
        doc, _err = b.json("pai-dlc-job.json")
        if isinstance(doc, dict) and "MODEL_DIR" not in (doc.get("Envs") or {}):
            out.append(Finding("pai-dlc-job.json", b.line_of("pai-dlc-job.json", '"Envs"'), "weights-local",
                               _("The PAI-DLC job sets no MODEL_DIR: it cannot find the local copy of the weights.")))
    return out


def check(b: Bundle) -> list[Finding]:
    launchers = [f for f in SHELL_LAUNCHERS if b.has(f)]
    servers = [f for f in PY_SERVERS if b.has(f)]
    if not launchers and not servers:
        return []
    out: list[Finding] = []
    if not b.has("fetch-model.sh"):
        out.append(Finding(launchers[0] if launchers else servers[0], None, "weights-local",
                           _("The bundle has no fetch-model.sh: nothing stages the weights the launchers load.")))
    for rel in launchers:
        if rel in ("serve.sh", "serve-sglang.sh", "launch.sh") and not USES_DIR.search(b.text(rel) or ""):
            out.append(Finding(rel, b.line_of(rel, "MODEL=") or 1, "weights-local", _(
                "{path} never loads MODEL_DIR, the local copy fetch-model.sh writes.").format(path=rel)))
        out += _repo_findings(b, rel)
    for rel in servers:
        if "MODEL_DIR" not in (b.text(rel) or ""):
            out.append(Finding(rel, 1, "weights-local", _(
                "{path} never reads MODEL_DIR: it loads the weights from the hub instead of the local copy "
                "fetch-model.sh writes.").format(path=rel)))
    return out + _k8s(b) + _platforms(b)
