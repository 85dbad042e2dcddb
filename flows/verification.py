"""The verify flow: replay trajectories in real desktops and keep only those whose task verifier passes.

Run it:
    switchyard verify --run runs/demo --desktops 2       # replays the run's ingest-* and rewrite_cli stages
or from the Prefect UI as the `verify` deployment; the UI form is `VerifyConfig`.

(Not named `flows/verify.py`: Prefect loads a deployment's entrypoint file with its folder on sys.path, where a
`verify.py` would shadow the `verify` package.)

Each record is replayed from its task's initial state (`task_id` → a task of the suite) on a pool of embedded
desktops (Xvfb + openbox + real apps, shell commands in a bubblewrap sandbox). Accepted records carry the
verifier's outcome and per-step replay evidence; every other record is written to `verify/rejects.jsonl` with
its reason and replay log. The replay itself is `verify.replay.replay_many`; this module only orchestrates.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, ConfigDict, Field

from flows.progress import track
from synth import __version__ as synth_version
from synth.runs import RunDir, StageManifest, content_key, stage_key
from verify.env.local import LocalDesktopConfig
from verify.env.pool import EnvPool
from verify.replay import ReplayConfig, replay_many
from verify.tasks import load_suite

REPO_ROOT = Path(__file__).resolve().parent.parent


class VerifyStageConfig(BaseModel):
    """How to replay: which task suite, how many desktops, and what counts as success."""

    model_config = ConfigDict(extra="forbid")

    tasks_dir: str = Field(
        default=str(REPO_ROOT / "data" / "tasks"),
        description="Folder of OSWorld-format task JSON files; a record's task_id must name one of them.",
    )
    desktops: int = Field(
        default=2,
        ge=1,
        description="Desktops replaying side by side (each ~260 MB RSS; CPU-bound beyond ~3 on 2 cores).",
    )
    desktop: LocalDesktopConfig = Field(
        default_factory=LocalDesktopConfig,
        description="Screen size, sandbox limits and pacing of each desktop.",
    )
    replay: ReplayConfig = Field(default_factory=ReplayConfig, description="Acceptance rule and evidence.")


class VerifyConfig(BaseModel):
    """Parameters of a standalone verify run."""

    model_config = ConfigDict(extra="forbid")

    run_dir: str = Field(
        description="Run directory holding the input stages; the `verify` stage is written there."
    )
    inputs: list[str] = Field(
        default_factory=list,
        description="Stages of run_dir to replay; empty = every ingest-* stage plus rewrite_cli.",
    )
    verify: VerifyStageConfig = Field(default_factory=VerifyStageConfig, description="Replay settings.")


@task(task_run_name="verify-replay", cache_policy=NO_CACHE)
def replay_stage(run_dir: str, inputs: list[str], cfg: VerifyStageConfig, key: str) -> StageManifest:
    run = RunDir(run_dir)
    if run.is_finished("verify", key):
        return run.manifest("verify")
    tasks, unsupported = load_suite(Path(cfg.tasks_dir))
    if unsupported:
        print(
            f"{len(unsupported)} task specs not loadable here (their records will be rejected): {unsupported}"
        )
    records = (record for stage in inputs for record in run.read_stage(stage))
    total = sum(run.manifest(stage).records_out for stage in inputs)
    with EnvPool(cfg.desktops, cfg.desktop) as pool:
        results = replay_many(records, tasks, pool, cfg.replay, images=run.images)
        return run.write_stage("verify", track(results, "verify", total), key=key)


def verify_key(run: RunDir, inputs: list[str], cfg: VerifyStageConfig) -> str:
    return stage_key(content_key(*(run.manifest(s).output_key for s in inputs)), cfg, synth_version)


def default_inputs(run: RunDir) -> list[str]:
    stages = sorted(p.name for p in Path(run.url).glob("ingest-*") if (p / "manifest.json").exists())
    return [*stages, "rewrite_cli"]


@flow(name="verify", log_prints=True)
def verify(config: VerifyConfig) -> StageManifest:
    """Replay the chosen stages of a run in the embedded desktops; write accepted records and rejects."""
    run = RunDir(config.run_dir)
    inputs = config.inputs or default_inputs(run)
    manifest = replay_stage(config.run_dir, inputs, config.verify, verify_key(run, inputs, config.verify))
    create_table_artifact(
        [{"reason": reason, "records": n} for reason, n in sorted(manifest.rejected_by_reason.items())]
        or [{"reason": "-", "records": 0}],
        key="verify-rejects",
        description=f"Replay: {manifest.records_out} of {manifest.records_in} records accepted",
    )
    return manifest
