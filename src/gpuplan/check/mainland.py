"""In a mainland-China region (cn-*, not cn-hongkong) nothing that runs on the node, the pod or the function reaches
for hosts a mainland node cannot rely on: Docker Hub (docker.io, registry-1.docker.io, unqualified image names such
as ``vllm/vllm-openai:v0.8.5`` or ``python:3.12-slim``), NVIDIA's registry (nvcr.io) or Hugging Face
(huggingface.co, hf.co). Images come from Alibaba Cloud Container Registry, weights from ModelScope or OSS
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

HOSTS = re.compile(r"(?<![\w.-])(?:registry-1\.docker\.io|docker\.io/|(?:[a-z]+://)docker\.io\b|nvcr\.io|"
                   r"(?:[\w-]+\.)?huggingface\.co|hf\.co)(?![\w-])", re.I)
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


def _host_findings(b: Bundle, rel: str) -> list[Finding]:
    text = b.text(rel) or ""
    out = []
    if rel.endswith(".py"):
        strings = _python_strings(text)
        if strings is not None:
            for line, s in strings:
                m = HOSTS.search(s)
                if m:
                    out.append(_host(rel, line, m.group(0)))
            return out
    for i, raw in enumerate(text.splitlines(), 1):
        for seg in _logical_lines(raw):
            if _comment(seg):
                continue
            m = HOSTS.search(seg)
            if m:
                out.append(_host(rel, i, m.group(0)))
                break
    return out


def _host(rel: str, line: int, host: str) -> Finding:
    return Finding(rel, line, "mainland-host", _(
        "{host} is named in a file that runs on the node; mainland nodes cannot rely on reaching it. Use Alibaba "
        "Cloud Container Registry for images and ModelScope or OSS for weights.").format(host=host.rstrip("/")))


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
            out.append((i, key.group(1)))
        out += [(i, j.group(1) or j.group(2)) for j in re.finditer(r'"Image"\s*:\s*"([^"]+)"|"image"\s*:\s*"([^"]+)"', line)]
        out += [(i, p.group(1)) for p in re.finditer(r"\bdocker\s+pull\s+(\S+)", line)]
    built = set(re.findall(r"docker\s+build\b[^\n]*?\s-t\s+(\S+)", text))
    return [(i, img) for i, img in out if img.strip("'\"") not in built and not img.startswith("$")]


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
    for rel in _node_files(b):
        out += _host_findings(b, rel)
        for line, image in _images(b, rel):
            if docker_hub(image):
                out.append(Finding(rel, line, "mainland-image", _(
                    "The image {image} comes from Docker Hub, which mainland nodes cannot rely on reaching; push it to "
                    "Alibaba Cloud Container Registry (registry.<region>.aliyuncs.com) and name that copy.").format(
                        image=image.strip("'\""))))
        if index and (rel.endswith(("Dockerfile", ".sh"))):
            f = _pip_index(b, rel, str(index))
            if f:
                out.append(f)
    return out
