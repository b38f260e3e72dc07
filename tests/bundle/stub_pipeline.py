"""A stand-in for diffusers' DiffusionPipeline (the class an SDXL folder's model_index.json names), so the bundle's image server answers on a CPU.

``make(model, device)`` is the PIPELINE_FACTORY serve_images.py accepts; every call is recorded and returns
``n`` images whose ``save(buf, format="PNG")`` writes a small valid PNG."""

from __future__ import annotations

import struct
import zlib
from types import SimpleNamespace

CALLS: list[dict] = []


def tiny_png(width: int = 1, height: int = 1) -> bytes:
    """A valid 8-bit grey PNG of width x height (PNG spec: signature, IHDR, IDAT, IEND)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


class StubImage:
    def __init__(self, width: int, height: int) -> None:
        self.size = (width, height)

    def save(self, buf, format: str = "PNG") -> None:  # noqa: A002 - PIL's keyword
        assert format == "PNG"
        buf.write(tiny_png(min(self.size[0], 8), min(self.size[1], 8)))


class StubPipeline:
    def __init__(self, model: str, device: str) -> None:
        self.model, self.device = model, device

    def __call__(self, **kwargs):
        CALLS.append({"model": self.model, "device": self.device, **kwargs})
        n = kwargs.get("num_images_per_prompt", 1)
        return SimpleNamespace(images=[StubImage(kwargs["width"], kwargs["height"]) for _ in range(n)])


def make(model: str, device: str) -> StubPipeline:
    return StubPipeline(model, device)
