"""Weights fetched once, in-region, and used: every launcher loads the local copy ``fetch-model.sh`` writes
(``MODEL_DIR``) instead of naming a hub repository the engine would download at start.

- shell launchers (serve.sh, serve-sglang.sh, launch.sh, swift-sft.sh) switch MODEL to MODEL_DIR and pass no
  literal ``org/name`` repository to ``--model`` (nor ``--use_hf true``);
- the Kubernetes Deployment's engine loads a path, not a repository id;
- Python servers (serve_images.py, transcribe.py, generate_images.py, generate_videos.py, embed.py) read MODEL_DIR;
- the platform definitions (Function Compute s.yaml, PAI-EAS service.json, PAI-DLC job, ACK Job) set MODEL_DIR.
"""

from __future__ import annotations

import re

from gpuplan.check.bundle import Bundle, Finding
from gpuplan.check.locate import yaml_line
from gpuplan.i18n import _

SHELL_LAUNCHERS = ("serve.sh", "serve-sglang.sh", "launch.sh", "swift-sft.sh")
PY_SERVERS = ("serve_images.py", "transcribe.py", "generate_images.py", "generate_videos.py", "embed.py")
# a variable set to the local copy (MODEL="$MODEL_DIR", SERVE_PATH="$MODEL_DIR"): the launcher loads it when the
# variable is used after that line
FROM_DIR = re.compile(r"""\b(?P<var>[A-Z_][A-Z0-9_]*)=["']?\$\{?MODEL_DIR\}?["']?(?=[\s;)]|$)""", re.M)
DIR_DEFAULT = re.compile(r'^MODEL_DIR="\$\{MODEL_DIR:-(?P<dir>[^}"]+)\}"', re.M)
REPO_ARG = re.compile(r"""--model(?:[_-](?:path|id|id_or_path|name_or_path))?(?:=|\s+)["']?(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)""")
USE_HF = re.compile(r"--use_hf\s+(?:true|True|1)\b")


def loads_model_dir(text: str) -> bool:
    """True when the script switches some variable to MODEL_DIR and uses that variable on another line (the engine's
    command, or a function that builds it)."""
    lines = text.splitlines()
    for m in FROM_DIR.finditer(text):
        var = m.group("var")
        at = text[:m.start()].count("\n")
        use = re.compile(r"\$\{?" + var + r"\b")
        if var != "MODEL_DIR" and any(use.search(ln) for i, ln in enumerate(lines) if i != at
                                      and not ln.lstrip().startswith("#")):
            return True
    return False


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
                else:
                    flag = next((f for f in ("--model-path", "--model") if f in args[:-1]), None)
                    model = args[args.index(flag) + 1] if flag else None
                line = yaml_line(b.text(rel) or "", ["spec", "template", "spec", "containers", j, "args"], i)
                mounts = [str(v.get("mountPath") or "").rstrip("/") for v in c.get("volumeMounts") or []
                          if isinstance(v, dict)]
                if model is not None and model.startswith("/") and not _under(model, mounts):
                    out.append(Finding(rel, line, "weights-local", _(
                        "The {kind}'s engine loads {model}, but no volume is mounted there: the pod's own disk has no "
                        "weights.").format(kind=doc["kind"], model=model)))
                elif model is not None and not model.startswith(("/", "$(")):
                    out.append(Finding(rel, line, "weights-hub", _(
                        "The {kind}'s engine loads {model} from the hub at every pod start; mount the weights (a "
                        "volume fetch-model.sh filled) and pass their path.").format(kind=doc["kind"], model=model)))
                elif model is None and "MODEL_DIR" not in _env_names(c):
                    out.append(Finding(rel, line, "weights-local", _(
                        "The {kind}'s container sets no MODEL_DIR: it cannot find the local copy of the weights.")
                        .format(kind=doc["kind"])))
    return out


def _under(path: str, mounts: list[str]) -> bool:
    return any(m and (path == m or path.startswith(m + "/")) for m in mounts)


def _platforms(b: Bundle) -> list[Finding]:
    out = []
    if b.has("function-compute/s.yaml"):
        docs, _err = b.yaml_docs("function-compute/s.yaml")
        for name, r in ((docs[0] or {}).get("resources") or {}).items() if docs and isinstance(docs[0], dict) else ():
            props = (r or {}).get("props") or {}
            env = props.get("environmentVariables") or {}
            mounts = [str(p.get("mountDir") or "").rstrip("/") for p in
                      ((props.get("ossMountConfig") or {}).get("mountPoints") or []) +
                      ((props.get("nasConfig") or {}).get("mountPoints") or []) if isinstance(p, dict)]
            line = yaml_line(b.text("function-compute/s.yaml") or "", ["resources", name, "props", "environmentVariables"])
            if "MODEL_DIR" not in env:
                out.append(Finding("function-compute/s.yaml", line, "weights-local", _(
                    "The function sets no MODEL_DIR: every cold start downloads the weights from the hub instead of "
                    "loading a staged copy (OSS or NAS mount).")))
            elif not _under(str(env["MODEL_DIR"]).rstrip("/"), mounts):
                out.append(Finding("function-compute/s.yaml", line, "weights-local", _(
                    "The function's MODEL_DIR ({dir}) is not a mounted OSS or NAS folder: every cold start downloads "
                    "the weights again.").format(dir=env["MODEL_DIR"])))
    if b.has("pai-eas/service.json"):
        doc, _err = b.json("pai-eas/service.json")
        doc = doc if isinstance(doc, dict) else {}
        dirs = [str(e.get("value") or "").rstrip("/") for c in doc.get("containers") or [] if isinstance(c, dict)
                for e in c.get("env") or [] if isinstance(e, dict) and e.get("name") == "MODEL_DIR"]
        mounts = [str(m.get("mount_path") or "").rstrip("/") for m in doc.get("storage") or [] if isinstance(m, dict)]
        if not dirs:
            out.append(Finding("pai-eas/service.json", b.line_of("pai-eas/service.json", '"containers"'), "weights-local",
                               _("The EAS service sets no MODEL_DIR: every instance downloads the weights from the hub "
                                 "at start instead of loading a mounted copy.")))
        elif not all(_under(d, mounts) for d in dirs):
            out.append(Finding("pai-eas/service.json", b.line_of("pai-eas/service.json", '"MODEL_DIR"'), "weights-local",
                               _("The EAS service's MODEL_DIR ({dir}) is not a mounted OSS or NAS folder (storage): every "
                                 "instance downloads the weights again.").format(dir=dirs[0])))
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
    local_dir = str(b.field("weights.local_dir"))
    if not b.has("fetch-model.sh"):
        out.append(Finding(launchers[0] if launchers else servers[0], None, "weights-local",
                           _("The bundle has no fetch-model.sh: nothing stages the weights the launchers load.")))
    for rel in [*launchers, "fetch-model.sh"] if b.has("fetch-model.sh") else launchers:
        text = b.text(rel) or ""
        if rel in ("serve.sh", "serve-sglang.sh", "launch.sh") and not loads_model_dir(text):
            out.append(Finding(rel, b.line_of(rel, "MODEL=") or 1, "weights-local", _(
                "{path} never loads MODEL_DIR, the local copy fetch-model.sh writes.").format(path=rel)))
        m = DIR_DEFAULT.search(text)
        if m and local_dir and m.group("dir") != local_dir:
            out.append(Finding(rel, text[:m.start()].count("\n") + 1, "weights-local", _(
                "{path} keeps the weights in {dir}, but the plan staged them in {planned} (plan.json weights.local_dir)."
            ).format(path=rel, dir=m.group("dir"), planned=local_dir)))
        if rel != "fetch-model.sh":
            out += _repo_findings(b, rel)
    for rel in servers:
        if "MODEL_DIR" not in (b.text(rel) or ""):
            out.append(Finding(rel, 1, "weights-local", _(
                "{path} never reads MODEL_DIR: it loads the weights from the hub instead of the local copy "
                "fetch-model.sh writes.").format(path=rel)))
    return out + _k8s(b) + _platforms(b)
