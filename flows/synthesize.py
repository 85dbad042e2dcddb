"""The synthesize flow: ingest GUI trajectories → GUI→CLI rewrite → [replay-verify] → publish an HF dataset.

Run it:
    switchyard demo                                                          # embedded real recordings
    switchyard synthesize --source agentnet:path/to/file.jsonl --out runs/my-run  # local, no server needed
or from the Prefect UI as the `synthesize` deployment (prefect.yaml); the UI form is `SynthesizeConfig`.

Every stage writes `<run>/<stage>/` shards, rejects and a manifest (written last). A rerun with the same inputs,
config and code version finds the manifest and skips the stage (the Prefect task cache uses the same content
key), so a killed run resumes without duplicates. This module holds only orchestration: the stages are plain
functions in `synth/`.
"""

from __future__ import annotations

import os
from pathlib import Path

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import ThreadPoolTaskRunner
from pydantic import BaseModel, ConfigDict, Field

from flows.progress import track
from flows.verification import VerifyStageConfig, replay_stage, verify_key
from synth import __version__ as synth_version
from synth.cli_rewrite import VERSION as REWRITE_VERSION
from synth.cli_rewrite import CliRewriteConfig, rewrite_cli
from synth.publish import PublishConfig, PublishReport, publish_dataset, push_to_hub
from synth.runs import RunDir, StageManifest, content_key, stage_key, write_report
from synth.sources.common import SourceConfig, read_source, source_fingerprint


class SynthesizeConfig(BaseModel):
    """Parameters of one synthesize run (the Prefect UI form and the CLI options are this model)."""

    model_config = ConfigDict(extra="forbid")

    sources: list[SourceConfig] = Field(
        min_length=1,
        description="Input datasets, each ingested by its own task (AgentNet JSONL, OSWorld run folders, "
        "switchyard JSONL, a Hugging Face dataset). Cost grows linearly with their size (~40k steps/s native).",
    )
    run_dir: str = Field(
        default="runs/synthesize",
        description="Run directory. Finished stages are skipped on rerun; delete it to start over.",
    )
    rewrite_cli: CliRewriteConfig = Field(
        default_factory=CliRewriteConfig,
        description="GUI→CLI rewrite settings (pure CPU, ~10k input steps/s).",
    )
    verify: VerifyStageConfig | None = Field(
        default=None,
        description="Replay every record in embedded desktops and publish only verified ones (records need a "
        "task_id of the suite). ~1–5 s of desktop time per record; None skips verification.",
    )
    publish: PublishConfig = Field(
        default_factory=PublishConfig,
        description="Dataset output (written to <run_dir>/dataset); with push=true and HF_TOKEN it is also "
        "uploaded to publish.repo_id in one commit.",
    )


# Concurrent tasks (sources are ingested in parallel); more than the machine's cores buys nothing.
WORKERS = int(os.environ.get("SWITCHYARD_WORKERS", "2"))


# Each task gets the precomputed content key of its stage; the RunDir manifest check skips a finished stage,
# so resuming does not depend on Prefect's result persistence (which is why Prefect's own cache is off).
@task(retries=2, retry_delay_seconds=5, task_run_name="{stage}", cache_policy=NO_CACHE)
def ingest(source: SourceConfig, stage: str, run_dir: str, key: str) -> StageManifest:
    run = RunDir(run_dir)
    return run.write_stage(stage, track(read_source(source, run.images), stage), key=key)


@task(task_run_name="rewrite-cli", cache_policy=NO_CACHE)
def rewrite(run_dir: str, inputs: list[str], cfg: CliRewriteConfig, key: str) -> StageManifest:
    run = RunDir(run_dir)
    records = (record for stage in inputs for record in run.read_stage(stage))
    total = sum(run.manifest(stage).records_out for stage in inputs)
    return run.write_stage("rewrite_cli", track(rewrite_cli(records, cfg), "rewrite_cli", total), key=key)


@task(task_run_name="publish", cache_policy=NO_CACHE)
def publish(
    run_dir: str, record_stages: list[str], reject_stages: list[str], cfg: PublishConfig, key: str
) -> PublishReport:
    run = RunDir(run_dir)
    out_dir = Path(run_dir) / "dataset"
    total = sum(run.manifest(stage).records_out for stage in record_stages)
    records = track((r for stage in record_stages for r in run.read_stage(stage)), "publish", total)
    rejects = (reject for stage in reject_stages for reject in run.read_rejects(stage))
    report = publish_dataset(records, rejects, run.images, out_dir, cfg)
    if cfg.push:
        if not cfg.repo_id:
            raise ValueError("publish.push needs publish.repo_id")
        report.revision = push_to_hub(
            out_dir, cfg.repo_id, token=os.environ.get("HF_TOKEN"), private=cfg.private
        )
    # the publish stage's own rejects (e.g. a screenshot missing from the store) are kept like every other
    run.write_stage(
        "publish",
        report.publish_rejects,
        key=key,
        records_in=report.trajectories + len({r.record_id for r in report.publish_rejects}),
        force=True,
        metadata=report.model_dump(mode="json", exclude={"publish_rejects"}),
    )
    return report


def run_stages(config: SynthesizeConfig) -> list[str]:
    """The stage folders a synthesize run writes, in order."""
    ingest_stages = [f"ingest-{i:03d}" for i in range(len(config.sources))]
    return [*ingest_stages, "rewrite_cli", *(["verify"] if config.verify is not None else []), "publish"]


def stage_rows(run: RunDir, config: SynthesizeConfig) -> list[dict[str, str | int]]:
    """One row per stage: records in, out, rejected and reject reasons (for the artifact and the CLI)."""
    rows = []
    for stage in run_stages(config):
        m = run.manifest(stage)
        # publish writes parquet, not shards: its output count is the published trajectories
        out = m.metadata.get("trajectories", m.records_out) if stage == "publish" else m.records_out
        reasons = ", ".join(f"{r}={n}" for r, n in sorted(m.rejected_by_reason.items())) or "-"
        rows.append(
            {
                "stage": stage,
                "in": m.records_in,
                "out": out,
                "rejected": m.records_rejected,
                "reasons": reasons,
            }
        )
    return rows


@flow(name="synthesize", task_runner=ThreadPoolTaskRunner(max_workers=WORKERS), log_prints=True)
def synthesize(config: SynthesizeConfig) -> PublishReport:
    """Ingest every source, rewrite terminal typing into shell commands, publish originals and rewrites."""
    run = RunDir(config.run_dir)
    ingest_stages = run_stages(config)[: len(config.sources)]
    keys = [stage_key(source_fingerprint(source), source, synth_version) for source in config.sources]
    futures = [
        ingest.submit(source, stage, config.run_dir, key)
        for source, stage, key in zip(config.sources, ingest_stages, keys, strict=True)
    ]
    manifests = {stage: future.result() for stage, future in zip(ingest_stages, futures, strict=True)}

    rewrite_key = stage_key(
        content_key(*(m.output_key for m in manifests.values())),
        config.rewrite_cli,
        f"{synth_version}+rewrite_cli.{REWRITE_VERSION}",
    )
    manifests["rewrite_cli"] = rewrite(config.run_dir, ingest_stages, config.rewrite_cli, rewrite_key)

    record_stages = [*ingest_stages, "rewrite_cli"]
    if config.verify is not None:
        key = verify_key(run, record_stages, config.verify)
        manifests["verify"] = replay_stage(config.run_dir, record_stages, config.verify, key)
        record_stages = ["verify"]
    publish_key = stage_key(
        content_key(*(manifests[s].output_key for s in record_stages)), config.publish, synth_version
    )
    report = publish(config.run_dir, record_stages, list(manifests), config.publish, publish_key)
    manifests["publish"] = run.manifest("publish")

    summary = write_report(run, list(manifests))
    create_table_artifact(
        stage_rows(run, config),
        key="synthesize-stages",
        description="Records per stage and reject reasons",
    )
    create_markdown_artifact(
        f"{summary}\n\n## Dataset\n\n`{report.out_dir}`: {report.summary()}"
        + (
            f"\n\nPushed to `{config.publish.repo_id}` at revision `{report.revision}`."
            if report.revision
            else ""
        ),
        key="synthesize-report",
        description="Synthesize run report",
    )
    return report
