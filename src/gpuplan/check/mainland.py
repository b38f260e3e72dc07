"""In a mainland-China region (cn-*, not cn-hongkong) nothing that runs on the node, the pod or the function reaches
for hosts a mainland node cannot rely on: the forbidden hosts of data/environments.yaml (Docker Hub, NVIDIA's registry
nvcr.io and its GitHub-hosted package repository, Hugging Face, download.pytorch.org), and no image comes from anywhere
but what the plan declares in plan.json ``environment``: the bundle's own image in your ACR (``image``), the base image
it is built FROM (``base_image``, an Alibaba registry) and the documented copies in your ACR (``copied_images``: the
DCGM exporter). An unqualified image name (``vllm/vllm-openai:v0.8.5``, ``python:3.12-slim``) is Docker Hub's.
Images come from Alibaba Cloud Container Registry, weights from ModelScope or OSS
(/work/shared/facts/serving-deploy-notes.md, "Where images and weights come from on a mainland node"). When plan.json
declares ``environment.pip_index``, every file that runs pip names it.

Comments and Python docstrings are not run, so a URL there is not a finding; the bundle's documents (PLAN.md,
README.md, plan.json, charts) are not read.
"""

from __future__ import annotations

import ast
import re

from gpuplan.check.bundle import Bundle, Finding
from gpuplan.i18n import _



def _hosts() -> re.Pattern:
    """A forbidden host (or a subdomain of one) in a URL (``https://huggingface.co``) or a reference followed by a
    path or port (``nvcr.io/nvidia/...``); a bare word such as Ubuntu's ``docker.io`` package is not a host."""
    from gpuplan.plan.advice.node_env import forbidden_hosts

    names = "|".join(re.escape(h) for h in sorted(forbidden_hosts(), key=len, reverse=True))
    return re.compile(rf"(?:[a-z][a-z0-9+.-]*://(?:[\w-]+\.)*(?:{names})(?![\w.-])|(?<![\w.-])(?:[\w-]+\.)*(?:{names})(?=[/:]))",
                      re.I)


NODE_FILES = ("*.sh", "**/*.sh", "Dockerfile", "**/Dockerfile", "*.py", "*.service", "cloud-init.yaml",
              "requirements*.txt", "k8s/*.yaml", "autoscale/*.yaml", "function-compute/s.yaml",
              "function-compute/terraform/*.tf", "terraform/*.tf", "autoscale/ess/*.tf", "pai-eas/*.json",
              "pai-dlc-job.json", "*.yaml")
SKIP = ("PLAN.md", "plan.json", "autoscale/metrics-adapter-values.yaml", "monitoring/")
# an image reference: [registry/]name[:tag][@digest]; the registry is the first part when it has '.', ':' or is
# localhost (Docker's rule); otherwise the image is on Docker Hub
IMAGE = re.compile(r"^(?P<ref>[a-z0-9][a-z0-9._/-]*(?::[\w][\w.-]*)?(?:@sha256:[0-9a-f]{64})?)$")


def _node_files(b: Bundle) -> list[str]:
    seen = set()
    for pattern in NODE_FILES:
        seen.update(b.glob(pattern))
    return sorted(f for f in seen if not f.startswith(SKIP) and f not in SKIP)


def docker_hub(image: str) -> bool:
    """True when Docker would pull ``image`` from Docker Hub."""
    ref = image.strip().strip("'\"")
    if not IMAGE.match(ref) or "${" in ref:
        return False
    first = ref.split("/", 1)[0]
    return "/" not in ref or not ("." in first or ":" in first or first == "localhost") or first.startswith("docker.io")


def _logical_lines(raw: str) -> list[str]:
    """A physical line split at escaped newlines (a script embedded in YAML/JSON keeps them as '\\n')."""
    return raw.split("\\n")


def _comment(segment: str) -> bool:
    return segment.strip().startswith(("#", "//"))


def _python_strings(text: str) -> list[tuple[int, str]] | None:
    """(line, text) of the string literals that are not docstrings."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    docs = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            docs.add(id(body[0].value))
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def _host_findings(b: Bundle, rel: str, hosts: re.Pattern) -> list[Finding]:
    text = b.text(rel) or ""
    out = []
    if rel.endswith(".py"):
        strings = _python_strings(text)
        if strings is not None:
            for line, s in strings:
                m = hosts.search(s)
                if m:
                    out.append(_host(rel, line, m.group(0)))
            return out
    for i, raw in enumerate(text.splitlines(), 1):
        for seg in _logical_lines(raw):
            if _comment(seg):
                continue
            m = hosts.search(seg)
            if m:
                out.append(_host(rel, i, m.group(0)))
                break
    return out


def _host(rel: str, line: int, host: str) -> Finding:
    host = re.sub(r"^[a-z][a-z0-9+.-]*://", "", host, flags=re.I).rstrip("/:")
    return Finding(rel, line, "mainland-host", _(
        "{host} is named in a file that runs on the node; mainland nodes cannot rely on reaching it. Use Alibaba "
        "Cloud Container Registry for images, Alibaba's mirrors for packages and ModelScope or OSS for weights.").format(
            host=host))


def _images(b: Bundle, rel: str) -> list[tuple[int, str]]:
    """(line, image) of the images a file makes the node pull."""
    text = b.text(rel) or ""
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if re.match(r"^\s*#", line):
            continue
        if rel.endswith("Dockerfile"):
            out += [(i, f.group(1)) for f in re.finditer(r"^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)", line, re.I)]
        key = re.match(r"^\s*-?\s*image:\s*['\"]?([^'\"\s#]+)", line)
        if key and rel.endswith((".yaml", ".yml")):
            default = re.search(r"\$\{env\('\w+',\s*'([^']+)'\)\}", line)   # Serverless Devs: ${env('IMAGE', '<ref>')}
            out.append((i, default.group(1) if default else key.group(1)))
        out += [(i, j.group(1) or j.group(2)) for j in re.finditer(r'"Image"\s*:\s*"([^"]+)"|"image"\s*:\s*"([^"]+)"', line)]
        out += [(i, p.group(1)) for p in re.finditer(r"\bdocker\s+pull\s+(\S+)", line)]
        out += [(i, img) for img in _docker_run_images(line)]
    built = set(re.findall(r"docker\s+build\b[^\n]*?\s-t\s+(\S+)", text))
    return [(i, img) for i, img in out if img.strip("'\"") not in built and not img.startswith("$")]


# docker run options that take a value (the image is the first argument that is not an option or its value)
RUN_VALUE_OPTS = {"-p", "--publish", "-v", "--volume", "--name", "--restart", "--gpus", "--cap-add", "-e", "--env",
                  "--env-file", "--network", "--net", "--ipc", "--mount", "--entrypoint", "-w", "--workdir", "--runtime",
                  "--shm-size", "--ulimit", "-u", "--user", "-l", "--label", "--device", "--add-host", "--log-driver",
                  "--log-opt", "--memory", "-m", "--cpus", "--pid", "--security-opt", "-h", "--hostname"}


def _docker_run_images(line: str) -> list[str]:
    out = []
    for m in re.finditer(r"\bdocker\s+(?:container\s+)?run\s+(.*)", line):
        tokens = m.group(1).replace("''", "'").split()
        skip = False
        for tok in tokens:
            if skip:
                skip = False
                continue
            if tok.startswith("-"):
                skip = "=" not in tok and tok in RUN_VALUE_OPTS
                continue
            out.append(tok.strip("'\";"))
            break
    return out


def _declared_images(b: Bundle) -> set[str]:
    """The images plan.json ``environment`` declares: the bundle's image, its base and the documented copies."""
    env = b.field("environment", None) or {}
    out = {str(env.get("image") or ""), str(env.get("base_image") or "")}
    out |= {str(c.get("image") or "") for c in env.get("copied_images") or [] if isinstance(c, dict)}
    return {i for i in out if i}


def _pip_index(b: Bundle, rel: str, index: str) -> Finding | None:
    text = b.text(rel) or ""
    line = b.line_of(rel, re.compile(r"\bpip3?\s+install\b|-m\s+pip\s+install\b"))
    if line is None or index in text or "PIP_INDEX_URL" in text:
        return None
    return Finding(rel, line, "mainland-pip", _(
        "pip installs from its default index here; the plan's environment declares {index} for this region.").format(
            index=index))


def check(b: Bundle) -> list[Finding]:
    if not b.mainland:
        return []
    out: list[Finding] = []
    index = b.field("environment.pip_index", None)
    declared = _declared_images(b)
    hosts = _hosts()
    for rel in _node_files(b):
        out += _host_findings(b, rel, hosts)
        for line, image in _images(b, rel):
            ref = image.strip("'\"")
            if docker_hub(ref):
                out.append(Finding(rel, line, "mainland-image", _(
                    "The image {image} comes from Docker Hub, which mainland nodes cannot rely on reaching; push it to "
                    "Alibaba Cloud Container Registry (registry.<region>.aliyuncs.com) and name that copy.").format(
                        image=ref)))
            elif declared and ref not in declared and not hosts.search(ref):
                out.append(Finding(rel, line, "mainland-image", _(
                    "The image {image} is not one plan.json declares (environment: image, base_image, copied_images); "
                    "a mainland node pulls only the bundle's image, its base image and the documented copies in your "
                    "ACR.").format(image=ref)))
        if index and (rel.endswith(("Dockerfile", ".sh"))):
            f = _pip_index(b, rel, str(index))
            if f:
                out.append(f)
    return out
