"""Source configs (discriminated union) and the `read_source` entry point."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError
from sources_helpers import FIXTURES, split

from synth.schema import Screen
from synth.sources.common import (
    AgentNetSourceConfig,
    HFSourceConfig,
    NativeSourceConfig,
    OSWorldSourceConfig,
    SourceConfig,
    expand_paths,
    read_source,
)
from synth.sources.native import write_native

ADAPTER = TypeAdapter(SourceConfig)


def test_configs_parse_by_kind_and_reject_typos():
    assert isinstance(ADAPTER.validate_python({"kind": "agentnet", "path": "a.jsonl"}), AgentNetSourceConfig)
    assert isinstance(ADAPTER.validate_python({"kind": "osworld", "path": "r"}), OSWorldSourceConfig)
    assert isinstance(
        ADAPTER.validate_python({"kind": "native", "path": "n", "image_dir": "i"}), NativeSourceConfig
    )
    hf = ADAPTER.validate_python(
        {
            "kind": "hf",
            "path": "me/ds",
            "coord_space": {"kind": "grid", "grid_max": 999},
            "screen": {"width": 10, "height": 5},
        }
    )
    assert (hf.coord_space.kind, hf.coord_space.grid_max) == ("grid", 999)
    assert hf.screen == Screen(width=10, height=5)
    with pytest.raises(ValidationError):
        ADAPTER.validate_python({"kind": "parquet", "path": "x"})
    with pytest.raises(ValidationError):
        ADAPTER.validate_python({"kind": "agentnet", "path": "x", "imagedir": "typo"})
    with pytest.raises(ValidationError):
        ADAPTER.validate_python({"kind": "native", "path": "x", "screen": {"width": 1, "height": 1}})
    # every field documents itself (the CLI prints these)
    for model in (AgentNetSourceConfig, OSWorldSourceConfig, NativeSourceConfig, HFSourceConfig):
        undocumented = [n for n, f in model.model_fields.items() if n != "kind" and not f.description]
        assert undocumented == [], model.__name__


def test_read_source_dispatches_every_kind(tmp_path: Path, store):
    agentnet = ADAPTER.validate_python(
        {"kind": "agentnet", "path": str(FIXTURES / "agentnet" / "agentnet_sample.jsonl")}
    )
    kept, _ = split(list(read_source(agentnet, store)))
    assert [t.source.dataset for t in kept] == ["agentnet", "agentnet"]

    osworld = ADAPTER.validate_python(
        {
            "kind": "osworld",
            "path": str(FIXTURES / "osworld" / "results"),
            "examples_dir": str(FIXTURES / "osworld" / "examples"),
            "dataset": "osworld-fixture",
        }
    )
    runs, _ = split(list(read_source(osworld, store)))
    assert [t.source.dataset for t in runs] == ["osworld-fixture", "osworld-fixture"]

    write_native(kept + runs, tmp_path / "n.jsonl")
    native = ADAPTER.validate_python({"kind": "native", "path": str(tmp_path / "*.jsonl"), "limit": 3})
    back, _ = split(list(read_source(native, store)))
    assert back == (kept + runs)[:3]

    import datasets

    (tmp_path / "hf" / "data").mkdir(parents=True)
    datasets.Dataset.from_list([{"record": t.to_json(), "images": []} for t in kept]).to_parquet(
        str(tmp_path / "hf" / "data" / "train.parquet")
    )
    hf = ADAPTER.validate_python(
        {"kind": "hf", "path": str(tmp_path / "hf"), "cache_dir": str(tmp_path / "cache")}
    )
    # no image bytes in the rows, but the screenshots are already in the store
    assert split(list(read_source(hf, store)))[0] == kept


def test_expand_paths(tmp_path: Path):
    (tmp_path / "a").mkdir()
    for name in ("a/2.jsonl", "a/1.jsonl", "a/notes.txt", "b.json"):
        (tmp_path / name).write_text("")
    assert [p.name for p in expand_paths(tmp_path / "a")] == ["1.jsonl", "2.jsonl"]
    assert [p.name for p in expand_paths(str(tmp_path / "**" / "*.json*"))] == [
        "1.jsonl",
        "2.jsonl",
        "b.json",
    ]
    with pytest.raises(FileNotFoundError):
        expand_paths(tmp_path / "nothing-*.jsonl")
