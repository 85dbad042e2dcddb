"""Content-addressed screenshot store: `images/<sha256[:2]>/<sha256>.png` under a run directory.

Bytes are stored exactly as received (never re-encoded), so the parquet output carries the original files.
`put` validates that the bytes decode as an image and raises `CorruptImage` otherwise.
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import imagehash
from PIL import Image, UnidentifiedImageError

from synth.schema import ImageRef


class CorruptImage(ValueError):
    """The bytes are not a decodable image."""


def describe_image(data: bytes) -> ImageRef:
    """Hash and validate image bytes without storing them."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            phash = str(imagehash.phash(image))
            width, height = image.size
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise CorruptImage(f"not a decodable image ({len(data)} bytes): {exc}") from exc
    return ImageRef(sha256=hashlib.sha256(data).hexdigest(), phash=phash, width=width, height=height)


class ImageStore:
    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)

    def path(self, ref: ImageRef | str) -> Path:
        sha = ref if isinstance(ref, str) else ref.sha256
        return self.root / sha[:2] / f"{sha}.png"

    def put(self, data: bytes) -> ImageRef:
        ref = describe_image(data)
        target = self.path(ref)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            # write-then-rename so a killed run never leaves a half-written image under its final name
            tmp = target.with_suffix(f".tmp{os.getpid()}")
            tmp.write_bytes(data)
            tmp.replace(target)
        return ref

    def put_file(self, path: str | os.PathLike[str]) -> ImageRef:
        return self.put(Path(path).read_bytes())

    def get(self, ref: ImageRef | str) -> bytes:
        return self.path(ref).read_bytes()

    def __contains__(self, ref: ImageRef | str) -> bool:
        return self.path(ref).exists()
