#!/usr/bin/env python3
"""Batch image generation for flux-schnell-images: a diffusers pipeline on 1 x A100-SXM4-80GB (ecs.gn7e-c16g1.4xlarge).

Not a chat server: diffusion models are served with diffusers
(DiffusionPipeline.from_pretrained loads the pipeline class the weights' model_index.json names: SDXL, SD 1.5, SD3,
FLUX, PixArt; https://github.com/huggingface/diffusers), one process per GPU, each GPU
generating every n-th prompt: the plan counts 1 GPU(s) per node, each a copy of the pipeline (its
job.items_per_s). One prompt per line in --prompts; one PNG per prompt (and per --num-images) in --out, named by the
prompt's line among the prompts; an image already written is skipped, so a rerun resumes.

    (in the bundle's image: Dockerfile; fetch-model.sh stages the weights once into MODEL_DIR)
    python3 generate_images.py --prompts prompts.txt --out images/
    python3 generate_images.py --dry-run --prompts prompts.txt   # check the arguments only
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

MODEL = "black-forest-labs/FLUX.1-schnell"   # the repository fetch-model.sh downloads (its ModelScope id in mainland regions)
MODEL_DIR = os.environ.get("MODEL_DIR") or "/mnt/data/models/flux-schnell-images"   # the local copy every run loads


def local_weights(path: str, script: str) -> str:
    """The local copy of the weights, never a hub: a folder that fetch-model.sh (next to this script) filled once,
    inside the region (ModelScope or OSS in mainland regions). It runs fetch-model.sh when the copy is missing and
    keeps the hubs offline afterwards."""
    folder = Path(path)
    fetch = Path(__file__).with_name("fetch-model.sh")
    # a finished copy: fetch-model.sh's marker, or a copy placed there by hand (a config, and no download of the
    # script under way or left half done: a second process, one per GPU, must not load the first one's partial
    # download); fetch-model.sh reads a folder by the same rule
    busy = (folder / ".gpuplan-partial").exists() or folder.with_name(folder.name + ".lock").is_dir()
    ready = (folder / ".gpuplan-complete").is_file() or (
        not busy and any((folder / name).is_file() for name in ("config.json", "model_index.json")))
    if not ready:
        # fetch-model.sh downloads once per folder (a lock: the other processes wait for its marker)
        if not fetch.is_file() or subprocess.run(["bash", str(fetch)], env={**os.environ, "MODEL_DIR": str(folder)},
                                                 check=False).returncode != 0:
            sys.exit(f"{script}: no weights in {folder} and fetch-model.sh could not fetch them (see its message)")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    return str(folder)
DEFAULT_STEPS = 4
DEFAULT_HEIGHT = 1024   # the steps and pixels the plan timed
DEFAULT_WIDTH = 1024


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prompts", type=Path, required=True, help="text file, one prompt per line")
    p.add_argument("--out", type=Path, default=Path("images"), help="output folder (created)")
    p.add_argument("--model", default=MODEL_DIR, help="local folder of the weights (default: MODEL_DIR, %(default)s)")
    p.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="denoising steps (the plan assumed %(default)s)")
    p.add_argument("--height", type=int, default=DEFAULT_HEIGHT, help="image height in pixels")
    p.add_argument("--width", type=int, default=DEFAULT_WIDTH, help="image width in pixels")
    p.add_argument("--size", type=int, default=None, help="square images: sets --height and --width")
    p.add_argument("--batch-size", type=int, default=2, help="prompts per pipeline call")
    p.add_argument("--num-images", type=int, default=1, help="images per prompt")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help="cpu works but takes minutes per image")
    p.add_argument("--gpus", type=int, default=0, help="GPUs to use, one process each (default: all visible)")
    p.add_argument("--dry-run", action="store_true", help="check the arguments and the prompt file, then exit")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)   # "g/n": one GPU's share (set by the parent)
    args = p.parse_args(argv)
    if args.gpus < 0:
        p.error("--gpus must be >= 0")
    if args.size is not None:
        args.height = args.width = args.size
    if args.steps < 1 or min(args.height, args.width) < 64 or args.height % 8 or args.width % 8 or \
            args.batch_size < 1 or args.num_images < 1:
        p.error("--steps >= 1, --height and --width (or --size) a multiple of 8 (>= 64), --batch-size >= 1 and "
                "--num-images >= 1")
    return args


def read_prompts(path: Path) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        sys.exit(f"generate_images.py: cannot read {path}: {exc.strerror or exc}")
    prompts = [ln.strip() for ln in lines if ln.strip()]
    if not prompts:
        sys.exit(f"generate_images.py: {path} has no prompts (one per line)")
    return prompts


def gpu_count() -> int:
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for ln in out.splitlines() if ln.startswith("GPU "))


def run_workers(args, argv) -> int:
    """One process per GPU (CUDA_VISIBLE_DEVICES), each with every n-th prompt: the plan's data-parallel copies."""
    n = args.gpus or gpu_count()
    if n < 1:
        sys.exit("generate_images.py: no CUDA GPU visible (nvidia-smi); run on the GPU node or pass --device cpu")
    args.out.mkdir(parents=True, exist_ok=True)
    procs = [subprocess.Popen([sys.executable, __file__, *argv, "--worker", f"{g}/{n}"],
                              env={**os.environ, "CUDA_VISIBLE_DEVICES": str(g)}) for g in range(n)]
    codes = [p.wait() for p in procs]
    bad = [g for g, rc in enumerate(codes) if rc != 0]
    if bad:
        sys.exit(f"generate_images.py: GPU worker(s) {bad} failed (written images are kept; rerun to resume)")
    print(f"{n} GPU(s) done: {args.out}/")
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    prompts = read_prompts(args.prompts)
    if args.dry_run:
        print(f"{len(prompts)} prompt(s) -> {args.out}/ with {args.model}, {args.steps} steps, {args.width}x{args.height} px")
        return 0
    if args.device == "cuda" and not args.worker:
        return run_workers(args, argv)
    return work(args, prompts)


def work(args, prompts: list[str]) -> int:
    g, n = (int(x) for x in args.worker.split("/")) if args.worker else (0, 1)
    try:
        import torch
        from diffusers import DiffusionPipeline
    except ImportError as exc:
        sys.exit(f"generate_images.py: {exc.name} is not installed: pip install -r requirements-serve.txt")
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("generate_images.py: no CUDA GPU visible (nvidia-smi); run on the GPU node or pass --device cpu")
    dtype = torch.bfloat16 if args.device == "cuda" else torch.float32   # the plan's
    if dtype == torch.float32 and args.device == "cuda" and torch.cuda.get_device_capability()[0] >= 8:
        # the rate the plan timed float32 at: the TF32 tensor cores (PyTorch leaves matmuls on the FP32 cores)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    pipe = DiffusionPipeline.from_pretrained(local_weights(args.model, "generate_images.py"), torch_dtype=dtype,
                                             use_safetensors=True, local_files_only=True)
    pipe = pipe.to(args.device)
    args.out.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator(device=args.device).manual_seed(args.seed + g)

    def name(k: int, j: int) -> Path:
        return args.out / f"{k:06d}-{j}.png"

    # this GPU's prompts (every n-th), less those whose images an earlier run wrote
    mine = [k for k in range(g, len(prompts), n) if not name(k, args.num_images - 1).is_file()]
    written = 0
    for start in range(0, len(mine), args.batch_size):
        ks = mine[start:start + args.batch_size]
        images = pipe(prompt=[prompts[k] for k in ks], num_inference_steps=args.steps, height=args.height,
                      width=args.width, num_images_per_prompt=args.num_images, generator=gen).images
        for i, image in enumerate(images):
            image.save(name(ks[i // args.num_images], i % args.num_images))
            written += 1
    print(f"GPU {g}: wrote {written} image(s) to {args.out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
