"""Task specs (OSWorld-format JSON), their setup steps, and their evaluation.

A task file is OSWorld's format (`id, snapshot, instruction, source, config, trajectory, related_apps,
evaluator{func, conj, result, expected, options, postconfig}`; unknown OSWorld fields are kept, not rejected)
plus one optional switchyard key:

    "switchyard": {"domain": "terminal", "favours": "cli",
                   "demonstrations": {"gui": [<step>...], "cli": [...], "hybrid": [...]}}

A demonstration step is a pyautogui code string (absolute pixels of a 1280x720 screen), `{"cli": "<bash>"}`,
or `{"control": "wait"|"terminate"|"answer", "value": ...}`; `demo_actions()` turns a demonstration into
canonical `Action`s.

Everything a spec names (setup step types, getter types, metric names and their options, bundled files) is
checked by `load_task`, which raises `UnsupportedTask` naming what is missing: a spec that loads can run.
`download` / `cloud_file` need the network and are rejected. Setup steps run through a `TaskContext`
(`verify.env.base`): shell commands inside the agent sandbox, files written into the agent home.

    tasks, rejected = load_suite(Path("data/tasks"))
    run_setup(task, ctx); ...; score = evaluate(task, ctx)
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import shlex
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from synth.actions import parse_code
from synth.coords import CoordSpace
from synth.schema import Action, CliAction, Control, Screen
from verify.env.base import AGENT_HOME, EnvError, TaskContext
from verify.getters import GETTERS, NEEDS_NETWORK
from verify.metrics import METRICS

log = logging.getLogger(__name__)

SUITE_DIR = Path(__file__).resolve().parents[1] / "data" / "tasks"
DEMO_SCREEN = Screen(width=1280, height=720)
MAX_SLEEP_SECONDS = 5.0  # a `sleep` step is a bounded settle, never a stand-in for waiting on a condition
WINDOW_TIMEOUT = 30.0


class UnsupportedTask(ValueError):
    """A spec this engine cannot run; `name` is the missing/offending name, `reason` a snake_case code."""

    def __init__(self, name: str, reason: str, detail: str = ""):
        self.name, self.reason, self.detail = name, reason, detail
        super().__init__(f"{reason}: {name}" + (f" ({detail})" if detail else ""))


class SetupError(EnvError):
    """A setup or postconfig step failed while running: an infrastructure error, not a task failure."""


# ---------------------------------------------------------------- the spec


class SetupStep(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str = Field(description="Setup step name (OSWorld's), e.g. 'execute', 'open', 'launch'.")
    parameters: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments of the step.")


class Evaluator(BaseModel):
    model_config = ConfigDict(extra="allow")
    func: str | list[str] = Field(description="Metric name, or a list of them combined by `conj`.")
    conj: Literal["and", "or"] = Field(default="and", description="and: mean, 0 if any is 0; or: max.")
    result: dict[str, Any] | list[dict[str, Any]] | None = Field(
        default=None, description="Getter spec(s) for the state to score, one per metric."
    )
    expected: dict[str, Any] | list[dict[str, Any] | None] | None = Field(
        default=None,
        description="Getter spec(s) for the reference, one per metric (None: metric takes none).",
    )
    options: dict[str, Any] | list[dict[str, Any]] = Field(
        default_factory=dict, description="Keyword options of the metric(s)."
    )
    postconfig: list[SetupStep] = Field(
        default_factory=list, description="Steps run before the getters (e.g. save a document)."
    )

    def checks(self) -> list[tuple[str, dict[str, Any] | None, dict[str, Any] | None, dict[str, Any]]]:
        """(metric, result getter, expected getter, options) for each metric, OSWorld's list alignment."""
        funcs = self.func if isinstance(self.func, list) else [self.func]
        n = len(funcs)

        def spread(value: Any, default: Any) -> list[Any]:
            if isinstance(value, list):
                if len(value) != n:
                    raise UnsupportedTask(
                        "evaluator", "invalid_spec", f"{len(value)} entries for {n} metrics"
                    )
                return value
            return [default if value is None else value] * n

        return list(
            zip(
                funcs,
                spread(self.result, None),
                spread(self.expected, None),
                spread(self.options, {}),
                strict=True,
            )
        )


class CliStep(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cli: str = Field(min_length=1, description="A bash command run in the agent sandbox.")
    timeout: float = Field(default=30.0, gt=0, description="Wall-clock limit in seconds.")


class ControlStep(BaseModel):
    model_config = ConfigDict(extra="forbid")
    control: Literal["wait", "terminate", "answer"] = Field(description="Control action kind.")
    value: str | None = Field(default=None, description="terminate: success|failure; answer: the answer.")


DemoStep = str | CliStep | ControlStep


class Demonstrations(BaseModel):
    model_config = ConfigDict(extra="forbid")
    gui: list[DemoStep] = Field(
        default_factory=list, description="GUI-only: pyautogui code strings (and controls)."
    )
    cli: list[DemoStep] = Field(default_factory=list, description="CLI-only: shell commands (and controls).")
    hybrid: list[DemoStep] = Field(
        default_factory=list, description="Any mix of GUI code and shell commands."
    )


class SwitchyardTaskInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    domain: str = Field(description="Suite domain: os, terminal, calc, writer, impress, multi_apps.")
    favours: Literal["cli", "gui", "either"] = Field(
        default="either", description="Which interface the author expects to be the better fit."
    )
    demonstrations: Demonstrations = Field(
        default_factory=Demonstrations, description="Known-good solutions."
    )


class TaskSpec(BaseModel):
    model_config = ConfigDict(extra="allow")  # OSWorld adds fields over time; keep them, never choke on them
    id: str = Field(description="Unique task id.")
    snapshot: str = Field(default="", description="OSWorld VM snapshot name; informational here.")
    instruction: str = Field(description="What the agent is asked to do.")
    source: str = Field(default="", description="Where the task comes from.")
    config: list[SetupStep] = Field(default_factory=list, description="Setup steps run at reset, in order.")
    trajectory: str | None = Field(default=None, description="OSWorld trajectory dir; unused.")
    related_apps: list[str] = Field(default_factory=list, description="Apps the task involves.")
    evaluator: Evaluator = Field(description="How the final state is scored.")
    switchyard: SwitchyardTaskInfo | None = Field(default=None, description="switchyard extension.")
    _files_dir: Path = PrivateAttr(default=SUITE_DIR / "files")
    _path: Path | None = PrivateAttr(default=None)

    @property
    def domain(self) -> str:
        return self.switchyard.domain if self.switchyard else self.snapshot

    @property
    def path(self) -> Path | None:
        return self._path

    @property
    def files_dir(self) -> Path:
        return self._files_dir


# ---------------------------------------------------------------- setup steps


def _agent_path(path: str) -> str:
    """`~/x` and relative paths live in the agent home, as the agent's own shell would resolve them."""
    if path.startswith("~"):
        return AGENT_HOME + path[1:]
    if not path.startswith("/"):
        return str(PurePosixPath(AGENT_HOME) / path)
    return path


def _shell_command(command: str | list[str]) -> str:
    return command if isinstance(command, str) else shlex.join(command)


def _write_home_file(ctx: TaskContext, agent_path: str, data: bytes, mode: int | None) -> None:
    """Write a file into the agent home owned like the home itself, so the agent can edit it."""
    home = ctx.host_path(AGENT_HOME)
    target = ctx.host_path(agent_path)
    owner = home.stat()
    created = [p for p in reversed(target.parents) if p != home and home in p.parents and not p.exists()]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    # Whole-second mtime in the past: LibreOffice compares the mtime it saw at load with the file's at save,
    # and a sub-second mtime from "just now" made it ask "Document Has Been Changed by Others" (measured).
    stamp = int(time.time()) - 1
    os.utime(target, (stamp, stamp))
    if mode is not None:
        target.chmod(mode)
    for p in [*created, target]:
        st = p.stat()
        if (st.st_uid, st.st_gid) != (owner.st_uid, owner.st_gid):
            os.chown(p, owner.st_uid, owner.st_gid)


def _execute(
    ctx: TaskContext,
    command: str | list[str],
    shell: bool = True,
    stdout: str = "",
    stderr: str = "",
    until: dict[str, Any] | None = None,
    timeout: float = 60.0,
) -> None:
    # `shell`, `stdout`, `stderr` are OSWorld parameters: every command runs through bash here, and
    # OSWorld's stdout/stderr cache files have no reader in this engine.
    cmd = _shell_command(command)
    deadline = time.monotonic() + timeout
    while True:
        result = ctx.run_shell(cmd, timeout=timeout)
        if not until:
            if result.status != "ok" or (result.returncode or 0) != 0:
                raise SetupError(
                    f"setup command failed (rc={result.returncode}): {cmd[:200]}: {result.stderr[:300]}"
                )
            return
        if (
            ("returncode" in until and result.returncode == until["returncode"])
            or ("stdout" in until and until["stdout"] in result.stdout)
            or ("stderr" in until and until["stderr"] in result.stderr)
        ):
            return
        if time.monotonic() > deadline:
            raise SetupError(f"setup command never reached {until}: {cmd[:200]}")
        time.sleep(0.2)  # polling a condition the spec names; bounded by `timeout`


def _launch(ctx: TaskContext, command: str | list[str], shell: bool = False) -> None:
    if shell:
        argv = ["bash", "-c", _shell_command(command)]
    else:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
    ctx.launch(argv)


# Which program `open` starts for a file, by extension (OSWorld uses xdg-open; the local desktop has no MIME db).
OPENERS: dict[str, list[str]] = {
    **dict.fromkeys([".xlsx", ".xls", ".ods", ".csv"], ["soffice", "--calc", "--norestore"]),
    **dict.fromkeys([".docx", ".doc", ".odt", ".rtf"], ["soffice", "--writer", "--norestore"]),
    **dict.fromkeys([".pptx", ".ppt", ".odp"], ["soffice", "--impress", "--norestore"]),
    **dict.fromkeys([".txt", ".md", ".log", ".conf", ".ini", ".sh", ".py", ".json", ""], ["mousepad"]),
}


def _open(ctx: TaskContext, path: str, timeout: float = WINDOW_TIMEOUT) -> None:
    agent_path = _agent_path(path)
    opener = OPENERS[PurePosixPath(agent_path).suffix.lower()]
    ctx.launch([*opener, agent_path])
    title = PurePosixPath(agent_path).name
    if not ctx.wait_for_window(title, timeout=timeout):
        raise SetupError(f"no window titled {title!r} within {timeout}s after opening {agent_path}")


def _activate_window(
    ctx: TaskContext,
    window_name: str,
    strict: bool = False,
    by_class: bool = False,
    timeout: float = WINDOW_TIMEOUT,
) -> None:
    # TaskContext waits for windows but has no focus call; xdotool from inside the sandbox reaches the same
    # display. Focus is best effort (openbox already focuses new windows), the wait is not.
    if not ctx.wait_for_window(window_name, timeout=timeout):
        raise SetupError(f"no window titled {window_name!r} within {timeout}s")
    flag = "--class" if by_class else "--name"
    result = ctx.run_shell(
        f"xdotool search --limit 1 {flag} {shlex.quote(window_name)} windowactivate", timeout=10
    )
    if result.returncode != 0:
        log.info(
            "activate_window %r: xdotool rc=%s %s",
            window_name,
            result.returncode,
            result.stderr.strip()[:200],
        )


def _sleep(ctx: TaskContext, seconds: float) -> None:
    time.sleep(min(float(seconds), MAX_SLEEP_SECONDS))


def _create_file(ctx: TaskContext, path: str, content: str = "", mode: str | None = None) -> None:
    _write_home_file(ctx, _agent_path(path), content.encode("utf-8"), int(mode, 8) if mode else None)


def _upload_file(ctx: TaskContext, files: list[dict[str, str]]) -> None:
    # `local_path` was resolved to an absolute, existing file at load time.
    for f in files:
        mode = f.get("mode")
        _write_home_file(
            ctx, _agent_path(f["path"]), Path(f["local_path"]).read_bytes(), int(mode, 8) if mode else None
        )


SetupFn = Callable[..., None]

SETUP_STEPS: dict[str, SetupFn] = {
    "execute": _execute,
    "command": _execute,
    "launch": _launch,
    "open": _open,
    "activate_window": _activate_window,
    "sleep": _sleep,
    "create_file": _create_file,
    "upload_file": _upload_file,
}

# Step types that exist in OSWorld but need the network (named so the rejection says why).
SETUP_NEEDS_NETWORK = {"download", "googledrive", "login", "chrome_open_tabs", "proxy"}


# ---------------------------------------------------------------- loading and validation


def _check_step(step: SetupStep, files_dir: Path, where: str) -> None:
    if step.type in SETUP_NEEDS_NETWORK:
        raise UnsupportedTask(step.type, "needs_network", f"{where} setup step")
    fn = SETUP_STEPS.get(step.type)
    if fn is None:
        raise UnsupportedTask(step.type, "unknown_setup_step", where)
    try:
        inspect.signature(fn).bind(None, **step.parameters)
    except TypeError as e:
        raise UnsupportedTask(step.type, "bad_parameters", str(e)) from None
    if step.type == "sleep" and float(step.parameters["seconds"]) > MAX_SLEEP_SECONDS:
        raise UnsupportedTask(
            "sleep", "sleep_too_long", f"{step.parameters['seconds']}s > {MAX_SLEEP_SECONDS}s"
        )
    if step.type == "open":
        suffix = PurePosixPath(step.parameters["path"]).suffix.lower()
        if suffix not in OPENERS:
            raise UnsupportedTask(suffix or step.parameters["path"], "no_opener", "open setup step")
    if step.type == "upload_file":
        for f in step.parameters["files"]:
            local = files_dir / f["local_path"]
            if not local.is_file():
                raise UnsupportedTask(f["local_path"], "missing_file", f"not in {files_dir}")
            f["local_path"] = str(local.resolve())


def _check_getter(spec: dict[str, Any] | None, files_dir: Path) -> None:
    if spec is None:
        return
    kind = spec.get("type")
    if kind in NEEDS_NETWORK:
        raise UnsupportedTask(str(kind), "needs_network", "getter")
    if kind not in GETTERS:
        raise UnsupportedTask(str(kind), "unknown_getter")
    if kind == "local_file":
        paths = spec["path"] if spec.get("multi", False) else [spec["path"]]
        resolved = []
        for p in paths:
            local = files_dir / p
            if not local.is_file():
                raise UnsupportedTask(p, "missing_file", f"not in {files_dir}")
            resolved.append(str(local.resolve()))
        spec["path"] = resolved if spec.get("multi", False) else resolved[0]


def validate(task: TaskSpec) -> None:
    """Raise `UnsupportedTask` unless every name the spec uses is implemented (resolves bundled paths)."""
    files_dir = task.files_dir
    for step in task.config:
        _check_step(step, files_dir, "config")
    for step in task.evaluator.postconfig:
        _check_step(step, files_dir, "postconfig")
    for func, result, expected, options in task.evaluator.checks():
        metric = METRICS.get(func)
        if metric is None:
            raise UnsupportedTask(func, "unknown_metric")
        if result is None:
            raise UnsupportedTask(func, "invalid_spec", "metric without a result getter")
        _check_getter(result, files_dir)
        _check_getter(expected, files_dir)
        args = (None, None) if expected is not None else (None,)
        try:
            inspect.signature(metric).bind(*args, **options)
        except TypeError as e:
            raise UnsupportedTask(func, "bad_options", str(e)) from None
    if task.switchyard:
        for mode in ("gui", "cli", "hybrid"):
            for step in getattr(task.switchyard.demonstrations, mode):
                if mode == "gui" and isinstance(step, CliStep):
                    raise UnsupportedTask(
                        task.id, "invalid_spec", "a GUI-only demonstration contains a shell step"
                    )


def load_task(path: Path | str, files_dir: Path | None = None) -> TaskSpec:
    """Load and validate one task file. Bundled files resolve against `files_dir` (default `<suite>/files`,
    the suite being the parent of the task's domain directory)."""
    path = Path(path)
    try:
        task = TaskSpec.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, ValidationError) as e:
        raise UnsupportedTask(path.name, "invalid_spec", str(e).splitlines()[0]) from None
    task._path = path
    task._files_dir = Path(files_dir) if files_dir is not None else path.resolve().parent.parent / "files"
    validate(task)
    return task


def load_suite(root: Path | str = SUITE_DIR) -> tuple[list[TaskSpec], list[tuple[Path, str]]]:
    """All `<root>/<domain>/*.json` tasks, and the (path, reason) of those that cannot run here."""
    root = Path(root)
    tasks: list[TaskSpec] = []
    rejected: list[tuple[Path, str]] = []
    seen: dict[str, Path] = {}
    for path in sorted(root.glob("*/*.json")):
        if path.parent.name == "files":
            continue
        try:
            task = load_task(path, files_dir=root / "files")
        except UnsupportedTask as e:
            rejected.append((path, str(e)))
            continue
        if task.id in seen:
            rejected.append((path, f"duplicate_id: {task.id} (also {seen[task.id]})"))
            continue
        seen[task.id] = path
        tasks.append(task)
    return tasks, rejected


# ---------------------------------------------------------------- running


def _run_steps(steps: list[SetupStep], ctx: TaskContext) -> None:
    for step in steps:
        SETUP_STEPS[step.type](ctx, **step.parameters)


def run_setup(task: TaskSpec, ctx: TaskContext) -> None:
    """Run the task's `config` steps in order; a failing step raises `SetupError` (an infra error)."""
    _run_steps(task.config, ctx)


def evaluate(task: TaskSpec, ctx: TaskContext) -> float:
    """Run `postconfig`, then score each metric; `and` = mean (0 as soon as one is 0), `or` = max (1 at once)."""
    _run_steps(task.evaluator.postconfig, ctx)
    scores: list[float] = []
    for func, result_spec, expected_spec, options in task.evaluator.checks():
        result = GETTERS[result_spec["type"]](ctx, result_spec)
        if expected_spec is not None:
            expected = GETTERS[expected_spec["type"]](ctx, expected_spec)
            score = float(METRICS[func](result, expected, **options))
        else:
            score = float(METRICS[func](result, **options))
        log.debug("task %s metric %s -> %s", task.id, func, score)
        if task.evaluator.conj == "and" and score == 0.0:
            return 0.0
        if task.evaluator.conj == "or" and score == 1.0:
            return 1.0
        scores.append(score)
    if not scores:
        return 0.0
    return sum(scores) / len(scores) if task.evaluator.conj == "and" else max(scores)


# ---------------------------------------------------------------- demonstrations


def demo_actions(
    task: TaskSpec, mode: Literal["gui", "cli", "hybrid"], screen: Screen = DEMO_SCREEN
) -> list[Action]:
    """The task's `mode` demonstration as canonical actions (code strings parsed by `synth.actions`)."""
    if task.switchyard is None:
        return []
    actions: list[Action] = []
    for step in getattr(task.switchyard.demonstrations, mode):
        if isinstance(step, CliStep):
            actions.append(CliAction(command=step.cli, timeout=step.timeout))
        elif isinstance(step, ControlStep):
            actions.append(Control(kind=step.control, value=step.value))
        else:
            parsed = parse_code(step, screen=screen, space=CoordSpace.absolute())
            actions.extend(parsed if isinstance(parsed, list) else [parsed])
    return actions
