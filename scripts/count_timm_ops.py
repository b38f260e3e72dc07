"""Count the ops one eager forward of each timm architecture launches (scripts/model-configs/timm/ops.json).

Usage (needs torch and timm with its imports, torchvision and Pillow; no GPU, no weights, no network):
    python scripts/count_timm_ops.py            # every architecture of scripts/model-configs/timm/table.json
    python scripts/count_timm_ops.py resnet50   # just these (printed, not written)

Each model is built on the meta device (no memory, no compute) and run once at batch 1 at the table's image
size under a TorchDispatchMode that counts the aten ops it dispatches - what eager PyTorch launches one by
one from Python - leaving out views, reshapes and allocations, which launch no kernel. ResNet-50 counts 174
(the curated profile in data/models.yaml counts 175 from the module code). On the meta device SDPA runs its
math decomposition, so attention models count a few more ops per layer than a fused kernel launches.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TABLE = Path(__file__).resolve().parent / "model-configs" / "timm"
SKIP = {
    "aten.empty.memory_format", "aten.empty_like.default", "aten.zeros.default", "aten.new_empty.default",
    "aten.detach.default", "aten.view.default", "aten._unsafe_view.default", "aten.t.default", "aten.expand.default",
    "aten.permute.default", "aten.transpose.int", "aten.reshape.default", "aten.unsqueeze.default",
    "aten.squeeze.dim", "aten.select.int", "aten.slice.Tensor", "aten.split.Tensor", "aten.unbind.int",
    "aten.flatten.using_ints", "aten.alias.default", "aten.as_strided.default", "aten.split_with_sizes.default",
    "aten.chunk.default", "aten.squeeze.default", "aten.expand_as.default", "aten.view_as.default",
    "aten.lift_fresh.default", "aten._to_copy.default",
}


def count(name: str, size: int) -> int:
    import timm
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if str(func) not in SKIP:
                self.n += 1
            return func(*args, **(kwargs or {}))

    with torch.device("meta"):
        model = timm.create_model(name, pretrained=False)
    model.eval()
    counter = Count()
    with torch.no_grad(), counter:
        model(torch.empty(1, 3, size, size, device="meta"))
    return counter.n


def main(argv: list[str]) -> int:
    table = json.loads((TABLE / "table.json").read_text(encoding="utf-8"))["models"]
    names = argv or sorted(table)
    out: dict[str, int | None] = {}
    for name in names:
        try:
            out[name] = count(name, int(table.get(name, [224])[0]))
        except Exception as exc:  # noqa: BLE001 - a model timm cannot build on meta: left unknown
            print(f"{name}: {exc}", file=sys.stderr)
            out[name] = None
    if argv:
        print(json.dumps(out, indent=1))
    else:
        (TABLE / "ops.json").write_text(json.dumps(out, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
