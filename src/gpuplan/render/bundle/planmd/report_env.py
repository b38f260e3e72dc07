"""PLAN.md's sentences about the node environment (plan.json ``environment``), where the weights come from, and the
storage the whole run keeps (plan.storage.budget). Fixed sentences are msgids, values escaped with ``md``."""

from __future__ import annotations

from gpuplan.render.bundle.context import Ctx
from gpuplan.render.bundle.planmd.report_text import tr
from gpuplan.render.bundle.safe import Safe, inert, md


def _gb(n_bytes: float | int | None) -> str:
    return f"{(n_bytes or 0) / 1e9:,.0f}"


def environment_lines(c: Ctx) -> list[Safe]:
    """The image every launcher and platform runs in, and where packages come from."""
    e = c.env
    if e is None:
        return []
    out = [Safe(tr("Node environment: the bundle's image (Dockerfile) FROM {base}: Python {python}, CUDA {cuda}, torch "
                   "{torch}; packages pinned in {file} from {index} (plan.json `environment`). Every node, pod, job and "
                   "function runs it; push it to {registry}.", c.lang).format(
        base=md(e.base_image), python=md(e.python), cuda=md(e.cuda), torch=md(e.torch), file=md(e.requirements_file),
        index=md(e.pip_index), registry=md(e.registry)))]
    if e.mainland:
        out.append(Safe(tr("{region} is a mainland region: images from Alibaba registries, packages from Alibaba's PyPI "
                           "mirror, weights from ModelScope or your OSS bucket; nothing is pulled from Docker Hub, NGC "
                           "or Hugging Face at run time.", c.lang).format(region=md(c.region))))
        if c.platform == "ecs":
            for image, source in e.copied_images:
                cmd = f"docker pull {source} && docker tag {source} {image} && docker push {image}"
                out.append(Safe(tr("The DCGM exporter is NVIDIA's image {source}, which has no copy on an Alibaba "
                                   "registry: copy it once into your ACR namespace, from a machine that reaches "
                                   "nvcr.io (outside the mainland, e.g. in cn-hongkong), with {cmd} (replace "
                                   "your-namespace in the bundle too). The nodes pull {image}; `gpuplan check` allows "
                                   "this copy and no other image outside Alibaba's registries.", c.lang).format(
                    source=Safe(f"`{inert(source)}`"), image=Safe(f"`{inert(image)}`"), cmd=Safe(f"`{cmd}`"))))
    return out


def weights_lines(c: Ctx) -> list[Safe]:
    """Which repository the weights come from (its ModelScope id in mainland regions), and where they are staged."""
    from gpuplan.render.bundle.node.weights import download_repo, local_folder_model, model_dir, weights_source

    repo, ms, local = download_repo(c), weights_source(c), model_dir(c)
    line: str | None = None
    if c.platform in ("function-compute", "pai-eas"):
        pass   # the platform mounts the weights from OSS read-only (the storage note says how to stage them)
    elif local_folder_model(c):            # loaded where it is
        line = tr("Weights: the model folder {dir} is loaded where it is, nothing is downloaded: put its files at that "
                  "path on every node before starting (the ECS containers and the Kubernetes pods mount that node "
                  "folder read-only).", c.lang).format(dir=md(local))
    elif c.hub == "modelscope" and ms.id:
        line = tr("Weights: fetch-model.sh downloads {repo} once from ModelScope as {ms_id} (or from your OSS copy, "
                  "MODEL_OSS) into {dir}; every launcher and server loads that local copy.", c.lang).format(
            repo=md(repo), ms_id=md(ms.id), dir=md(local))
    elif c.hub == "modelscope":
        line = tr("Weights: no ModelScope id is known for {repo}: set MODELSCOPE_ID=<its ModelScope id>, or "
                  "MODEL_OSS=oss://<bucket>/<prefix> with your copy, before starting; fetch-model.sh stages it in {dir} "
                  "and every launcher and server loads that local copy.", c.lang).format(repo=md(repo), dir=md(local))
    else:
        line = tr("Weights: fetch-model.sh downloads {repo} once from Hugging Face (or from your OSS copy, MODEL_OSS) "
                  "into {dir}; every launcher and server loads that local copy. Gated models: HF_TOKEN in the "
                  "environment (/etc/gpuplan/secrets.env on ECS nodes, root, mode 0600), never in these files.",
                  c.lang).format(repo=md(repo), dir=md(local))
    out = [Safe(line)] if line else []
    if c.trust_remote_code:
        out.append(Safe(tr("{model} ships its own model code (not in transformers): the launchers pass "
                           "trust_remote_code; that code was written for the transformers of its release.",
                           c.lang).format(model=md(c.model))))
    return out


def storage_budget_line(c: Ctx, plan: dict) -> Safe | None:
    """Training and batch jobs: the bytes the run keeps against the disks the plan advises (plan.storage.budget)."""
    b = (plan.get("storage") or {}).get("budget")
    if not (c.training or c.batch_job) or not isinstance(b, dict):
        return None
    if c.batch_job:
        return Safe(tr("Storage for the whole job: scratch {scratch} GB + weights {weights} GB + the job's input {data} "
                       "GB + its output {output} GB = {need} GB on {where} of {cap} GB.", c.lang).format(
            scratch=_gb(b.get("scratch_bytes")), weights=_gb(b.get("weights_bytes")),
            data=f"{(b.get('dataset_bytes') or 0) / 1e9:,.1f}", output=f"{(b.get('output_bytes') or 0) / 1e9:,.1f}",
            need=_gb(b.get("disk_needed_bytes")), cap=_gb(b.get("disk_bytes")),
            where=md(c.data_dir)))
    shared = b.get("checkpoints_on") == "shared"
    values = dict(weights=_gb(b.get("weights_bytes")), data=_gb(b.get("dataset_bytes")),
                  kept=int(b.get("checkpoints_kept") or 0), ckpt=_gb(b.get("checkpoint_bytes")),
                  final=_gb(b.get("final_bytes")), scratch=_gb(b.get("scratch_bytes")),
                  need=_gb(b.get("shared_needed_bytes") if shared else b.get("disk_needed_bytes")),
                  cap=_gb(b.get("shared_bytes") if shared else b.get("disk_bytes")),
                  where=md(c.shared_dir if shared else c.data_dir))
    if shared:
        text = tr("Storage for the whole run: weights {weights} GB + dataset {data} GB + {kept} checkpoints x {ckpt} GB "
                  "(the launchers keep the newest {kept}: save_total_limit) + the final model {final} GB = {need} GB on "
                  "{where} of {cap} GB.", c.lang)
    else:
        text = tr("Storage for the whole run: scratch {scratch} GB + weights {weights} GB + dataset {data} GB + {kept} "
                  "checkpoints x {ckpt} GB (the launchers keep the newest {kept}: save_total_limit) + the final model "
                  "{final} GB = {need} GB on {where} of {cap} GB.", c.lang)
    return Safe(text.format(**values))
