"""The content-addressed screenshot store keeps bytes exactly and refuses what is not an image."""

import hashlib
import io

import pytest
from PIL import Image

from synth.images import CorruptImage, ImageStore


def _png(color: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), color).save(buffer, format="PNG")
    return buffer.getvalue()


def test_put_is_content_addressed_and_byte_exact(tmp_path):
    store = ImageStore(tmp_path)
    data = _png((10, 200, 30))
    ref = store.put(data)
    assert ref.sha256 == hashlib.sha256(data).hexdigest()
    assert store.path(ref) == tmp_path / ref.sha256[:2] / f"{ref.sha256}.png"
    assert store.get(ref) == data and ref in store
    assert (ref.width, ref.height) == (64, 48) and len(ref.phash) == 16
    assert store.put(data) == ref  # idempotent
    assert len(list(tmp_path.rglob("*.png"))) == 1


def test_different_images_get_different_refs(tmp_path):
    store = ImageStore(tmp_path)
    assert store.put(_png((0, 0, 0))).sha256 != store.put(_png((255, 255, 255))).sha256


@pytest.mark.parametrize("data", [b"", b"not an image", _png((1, 2, 3))[:40]])
def test_corrupt_bytes_are_refused_and_nothing_is_stored(tmp_path, data):
    store = ImageStore(tmp_path)
    with pytest.raises(CorruptImage):
        store.put(data)
    assert list(tmp_path.rglob("*")) == []
