"""The `switchyard` command line: runs the same Prefect flows the UI runs, on this machine (Prefect starts a
temporary local server when PREFECT_API_URL names none).

    switchyard demo                                   # the main job on the embedded samples → runs/demo/dataset
    switchyard synthesize --source agentnet:data.jsonl --out runs/x
    switchyard synthesize --config my.json --set publish.push=true --set publish.repo_id=me/data
    switchyard verify --run runs/x                    # replay a run's records in real desktops
    switchyard up                                     # local Prefect server + UI serving every deployment
    switchyard config synthesize                      # every option, its default and what it costs

Options are the fields of the flow's pydantic config: `--config` reads a JSON file of it, `--set a.b=value`
overrides one field (value parsed as JSON when it parses, else taken as a string).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.table import Table

# the ephemeral local server would try to phone home, which only logs errors on a closed network
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__.split("\n\n")[0])
config_app = typer.Typer(help="Show a flow's options with defaults and descriptions.")
app.add_typer(config_app, name="config")
console = Console()
M = TypeVar("M", bound=BaseModel)

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLES = REPO_ROOT / "data" / "samples"

SourceOpt = Annotated[
    list[str] | None,
    typer.Option("--source", "-i", help="KIND:PATH, KIND one of agentnet, osworld, native, hf. Repeatable."),
]
ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="JSON file with the flow's config.")]
SetOpt = Annotated[
    list[str] | None, typer.Option("--set", "-s", help="Override a field: a.b=value. Repeatable.")
]


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def build_config(model: type[M], base: dict[str, Any], config_file: Path | None, sets: list[str]) -> M:
    """Merge base values, a JSON config file and `a.b=value` overrides, then validate with the flow's model."""
    data: dict[str, Any] = dict(base)
    if config_file is not None:
        data.update(json.loads(config_file.read_text()))
    for assignment in sets:
        path, sep, value = assignment.partition("=")
        if not sep:
            raise typer.BadParameter(f"--set expects a.b=value, got {assignment!r}")
        *parents, leaf = path.split(".")
        node = data
        for name in parents:
            node = node.setdefault(name, {})
        node[leaf] = _parse_value(value)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        console.print(f"[red]invalid {model.__name__}:[/red]\n{exc}")
        raise typer.Exit(2) from exc


def _source_specs(specs: list[str]) -> list[dict[str, Any]]:
    sources = []
    for spec in specs:
        kind, sep, path = spec.partition(":")
        if not sep:
            raise typer.BadParameter(f"--source expects KIND:PATH, got {spec!r}")
        sources.append({"kind": kind, "path": path})
    return sources


def _print_synthesize_report(config, report) -> None:
    from flows.synthesize import stage_rows
    from synth.runs import RunDir

    table = Table(title=f"switchyard synthesize → {config.run_dir}")
    for column in ("stage", "in", "out", "rejected", "reasons"):
        table.add_column(column)
    for row in stage_rows(RunDir(config.run_dir), config):
        table.add_row(*(str(value) for value in row.values()))
    console.print(table)
    console.print(f"dataset: [bold]{report.out_dir}[/bold]  ({report.summary()})")
    console.print(
        f"read it back: python -c \"import datasets; print(datasets.load_dataset('{report.out_dir}', "
        f"'trajectories', split='train'))\""
    )


def _run_synthesize(config) -> None:
    from flows.progress import live
    from flows.synthesize import synthesize

    with live(console):
        report = synthesize(config)
    _print_synthesize_report(config, report)


@app.command()
def synthesize(
    source: SourceOpt = None,
    out: Annotated[str | None, typer.Option("--out", "-o", help="Run directory.")] = None,
    push: Annotated[
        str | None,
        typer.Option(
            "--push", metavar="REPO_ID", help="Also upload the dataset to this Hub repo (HF_TOKEN)."
        ),
    ] = None,
    config: ConfigOpt = None,
    set_: SetOpt = None,
) -> None:
    """Ingest → GUI→CLI rewrite → [replay-verify] → publish, as the Prefect flow `synthesize`."""
    from flows.synthesize import SynthesizeConfig

    base: dict[str, Any] = {}
    if source:
        base["sources"] = _source_specs(source)
    if out:
        base["run_dir"] = out
    pushes = ["publish.push=true", f"publish.repo_id={push}"] if push else []
    _run_synthesize(build_config(SynthesizeConfig, base, config, [*pushes, *(set_ or [])]))


@app.command()
def demo(
    out: Annotated[str, typer.Option("--out", "-o", help="Run directory.")] = "runs/demo",
    set_: SetOpt = None,
) -> None:
    """The main job on the embedded defaults: the bundled real desktop recordings in data/samples/."""
    from flows.synthesize import SynthesizeConfig

    base = {
        "sources": [
            {
                "kind": "native",
                "path": str(SAMPLES / "trajectories.jsonl"),
                "image_dir": str(SAMPLES / "images"),
            }
        ],
        "run_dir": out,
    }
    _run_synthesize(build_config(SynthesizeConfig, base, None, set_ or []))


@app.command()
def verify(
    run: Annotated[str, typer.Option("--run", "-r", help="Run directory whose stages are replayed.")],
    desktops: Annotated[int, typer.Option(help="Desktops side by side.")] = 2,
    config: ConfigOpt = None,
    set_: SetOpt = None,
) -> None:
    """Replay a run's trajectories in embedded desktops; write the `verify` stage (accepted + rejects)."""
    from flows.progress import live
    from flows.verification import VerifyConfig, verify

    cfg = build_config(VerifyConfig, {"run_dir": run, "verify": {"desktops": desktops}}, config, set_ or [])
    with live(console):
        manifest = verify(cfg)
    reasons = ", ".join(f"{r}={n}" for r, n in sorted(manifest.rejected_by_reason.items())) or "none"
    console.print(f"verified {manifest.records_out} of {manifest.records_in} records; rejects: {reasons}")


@app.command()
def up(
    port: Annotated[int, typer.Option(help="Port of the local Prefect server and UI.")] = 4200,
) -> None:
    """Start a local Prefect server (unless PREFECT_API_URL points at one) and serve every deployment."""
    from flows.serve import serve_all

    serve_all(port=port)


@config_app.command("synthesize")
def config_synthesize() -> None:
    """Print the synthesize flow's options as JSON schema (defaults and descriptions)."""
    from flows.synthesize import SynthesizeConfig

    console.print_json(json.dumps(SynthesizeConfig.model_json_schema()))


@config_app.command("verify")
def config_verify() -> None:
    """Print the verify flow's options as JSON schema (defaults and descriptions)."""
    from flows.verification import VerifyConfig

    console.print_json(json.dumps(VerifyConfig.model_json_schema()))


if __name__ == "__main__":
    app()
