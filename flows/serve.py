"""Serve every switchyard deployment from this machine, with a local Prefect server and UI if none is configured.

    switchyard up                # UI at http://127.0.0.1:4200 → Deployments → synthesize / verify → Run
    PREFECT_API_URL=http://prefect.internal:4200/api switchyard up   # serve into an existing server

`prefect.yaml` declares the same deployments for work pools (process or Kubernetes workers); this is the
zero-setup path: one process that owns a server and runs whatever the UI schedules.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from prefect import serve
from prefect.deployments.runner import RunnerDeployment
from prefect.settings import PREFECT_API_URL, temporary_settings

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLES = REPO_ROOT / "data" / "samples"


def demo_sources() -> list[dict]:
    return [
        {"kind": "native", "path": str(SAMPLES / "trajectories.jsonl"), "image_dir": str(SAMPLES / "images")}
    ]


def deployments() -> list[RunnerDeployment]:
    """The deployments `switchyard up` serves; their default parameters run on the embedded samples."""
    from flows.synthesize import SynthesizeConfig, synthesize
    from flows.verification import VerifyConfig, verify

    demo = SynthesizeConfig(sources=demo_sources(), run_dir=str(REPO_ROOT / "runs" / "ui-synthesize"))
    return [
        synthesize.to_deployment(
            name="synthesize",
            parameters={"config": demo.model_dump(mode="json")},
            description="Ingest → GUI→CLI rewrite → [replay-verify] → publish a Hugging Face dataset.",
            tags=["switchyard", "data"],
        ),
        verify.to_deployment(
            name="verify",
            parameters={"config": VerifyConfig(run_dir=demo.run_dir).model_dump(mode="json")},
            description="Replay a run's trajectories in embedded desktops; keep only verified ones.",
            tags=["switchyard", "desktop"],
        ),
    ]


def _wait_healthy(api_url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{api_url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.25)
    raise RuntimeError(f"Prefect server at {api_url} did not become healthy within {timeout:.0f} s")


def serve_all(port: int = 4200) -> None:
    if os.environ.get("PREFECT_API_URL"):
        serve(*deployments())
        return
    api_url = f"http://127.0.0.1:{port}/api"
    server = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    )
    try:
        _wait_healthy(api_url)
        print(f"Prefect UI: http://127.0.0.1:{port}")
        with temporary_settings(updates={PREFECT_API_URL: api_url}):
            serve(*deployments())
    finally:
        server.terminate()
        server.wait(timeout=30)
