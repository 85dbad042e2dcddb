"""The synthesize flow end to end under a real (temporary) Prefect server, and the CLI's config building."""

import json
from pathlib import Path

import datasets
import pytest

from flows.cli import build_config
from flows.synthesize import SynthesizeConfig, ingest, synthesize
from synth.runs import RunDir
from synth.schema import Trajectory
from synth.sources.common import AgentNetSourceConfig

FIXTURES = Path(__file__).parent.parent / "synth" / "sources" / "fixtures"
AGENTNET = FIXTURES / "agentnet" / "agentnet_sample.jsonl"


def _config(tmp_path: Path, *sources: dict) -> SynthesizeConfig:
    return SynthesizeConfig(sources=list(sources), run_dir=str(tmp_path / "run"))


def test_flow_ingests_rewrites_and_publishes_a_loadable_dataset(tmp_path, prefect_harness):
    broken = tmp_path / "broken.jsonl"
    broken.write_text(AGENTNET.read_text() + "{not json\n")
    config = _config(
        tmp_path,
        {"kind": "agentnet", "path": str(broken), "image_dir": str(AGENTNET.parent / "images")},
    )
    report = synthesize(config)

    run = RunDir(config.run_dir)
    ingest_manifest = run.manifest("ingest-000")
    inputs = len(broken.read_text().splitlines())
    # nothing lost: every input line is an ingested record or a reject with a reason
    assert ingest_manifest.records_out + ingest_manifest.records_rejected == inputs
    assert ingest_manifest.rejected_by_reason == {"malformed_record": 1}

    rewrite_manifest = run.manifest("rewrite_cli")
    assert rewrite_manifest.records_in == ingest_manifest.records_out
    assert rewrite_manifest.records_out >= 1, "the AgentNet fixture types `ls -la` into a terminal"

    rows = datasets.load_dataset(report.out_dir, "trajectories", split="train", cache_dir=str(tmp_path / "c"))
    assert rows.num_rows == ingest_manifest.records_out + rewrite_manifest.records_out
    rewritten = [
        Trajectory.from_json(r) for r, mode in zip(rows["record"], rows["mode"], strict=True) if mode != "gui"
    ]
    assert any(step.action.type == "cli" for t in rewritten for step in t.steps)
    card = (Path(report.out_dir) / "README.md").read_text()
    assert "malformed_record" in card and "configs:" in card
    assert (Path(config.run_dir) / "report.md").exists()


def test_rerun_skips_finished_stages_and_never_duplicates(tmp_path, prefect_harness):
    config = _config(tmp_path, {"kind": "agentnet", "path": str(AGENTNET)})
    synthesize(config)
    run = RunDir(config.run_dir)
    first = run.manifest("ingest-000")
    synthesize(config)
    again = run.manifest("ingest-000")
    assert again.finished_at == first.finished_at, "a finished stage must not be recomputed"
    assert len(list(run.read_stage("ingest-000"))) == first.records_out


def test_ingest_task_is_a_plain_function_underneath(tmp_path):
    manifest = ingest.fn(
        AgentNetSourceConfig(path=str(AGENTNET)), "ingest-000", str(tmp_path / "run"), "key-1"
    )
    assert manifest.records_out == len(AGENTNET.read_text().splitlines())


def test_build_config_merges_file_and_overrides(tmp_path):
    config_file = tmp_path / "c.json"
    config_file.write_text(json.dumps({"sources": [{"kind": "native", "path": "x.jsonl"}], "run_dir": "a"}))
    config = build_config(
        SynthesizeConfig,
        {"run_dir": "from-base"},
        config_file,
        ["run_dir=b", "publish.push=true", "publish.repo_id=me/data", "rewrite_cli.command_timeout=5"],
    )
    assert config.run_dir == "b"
    assert config.publish.push is True and config.publish.repo_id == "me/data"
    assert config.rewrite_cli.command_timeout == 5


def test_build_config_rejects_unknown_fields(tmp_path):
    import typer

    with pytest.raises(typer.Exit):
        build_config(
            SynthesizeConfig, {"sources": [{"kind": "native", "path": "x"}]}, None, ["publsh.push=1"]
        )


def test_served_deployments_register_with_typed_parameters(prefect_harness):
    from prefect.client.orchestration import get_client

    from flows.serve import deployments

    ids = [deployment.apply() for deployment in deployments()]
    with get_client(sync_client=True) as client:
        registered = [client.read_deployment(i) for i in ids]
    assert sorted(d.name for d in registered) == ["synthesize", "verify"]
    synth = next(d for d in registered if d.name == "synthesize")
    # the UI form is the pydantic model: its schema names the config's fields
    schema = json.dumps(synth.parameter_openapi_schema)
    assert "SynthesizeConfig" in schema and "rewrite_cli" in schema
    assert synth.parameters["config"]["sources"][0]["kind"] == "native"


@pytest.mark.desktop
def test_demo_with_replay_verification_publishes_only_verified_records(tmp_path, prefect_harness):
    from flows.serve import demo_sources

    config = SynthesizeConfig(sources=demo_sources(), run_dir=str(tmp_path / "run"), verify={"desktops": 2})
    report = synthesize(config)
    run = RunDir(config.run_dir)
    verify = run.manifest("verify")
    produced = run.manifest("ingest-000").records_out + run.manifest("rewrite_cli").records_out
    assert verify.records_in == produced
    assert verify.records_out + verify.records_rejected == produced, "every record accepted or rejected"
    assert verify.records_out >= produced - 2, f"replay rejected too many: {verify.rejected_by_reason}"
    rows = datasets.load_dataset(report.out_dir, "trajectories", split="train", cache_dir=str(tmp_path / "c"))
    assert rows.num_rows == verify.records_out
    assert all(rows["outcome_success"]) and {"cli", "hybrid"} & set(rows["mode"]), (
        "verified rewrites published"
    )


def test_no_flow_module_shadows_a_package():
    # a served deployment run loads its entrypoint file with the file's folder first on sys.path; a
    # flows/verify.py then shadowed the `verify` package and every served run crashed on import
    root = Path(__file__).resolve().parents[2]
    packages = {"synth", "verify", "train", "flows"}
    assert not packages & {p.stem for p in (root / "flows").glob("*.py")}
