"""Task getters: read state out of an environment (or the bundled task files) for a metric to compare.

A getter is `getter(ctx, spec) -> value`, where `ctx` is the environment's `TaskContext` and `spec` the getter
dict of an OSWorld evaluator (`{"type": "vm_file", "path": ..., "dest": ...}`). Supported types:

- `vm_file`: host `Path` of an agent file (`ctx.host_path`), or None when it does not exist. With
  `"multi": true`, `path` is a list and `gives` (default [0]) picks which paths are returned; one pick returns
  a single value, several a list (OSWorld's convention). Files are read in place: no copy is made.
- `vm_command_line` / `vm_command_error`: stdout / stderr of a command run in the agent sandbox.
- `rule`: the spec's `rules` object, unchanged.
- `local_file`: a file bundled with the task suite; its `path` is resolved against the suite's `files/`
  directory when the spec is loaded (see `verify.tasks`), so here it is already absolute.

`cloud_file` (and any other getter needing the network) is deliberately absent: such specs are rejected at
load time by `verify.tasks`. `GETTERS` is the registry specs are validated against.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from verify.env.base import EnvError, TaskContext

Getter = Callable[[TaskContext, dict[str, Any]], Any]


def _command(spec: dict[str, Any]) -> str:
    command = spec["command"]
    return command if isinstance(command, str) else shlex.join(command)


def _picked(values: list[Any], spec: dict[str, Any]) -> Any:
    gives = spec.get("gives", [0])
    picked = [values[i] for i in gives]
    return picked[0] if len(picked) == 1 else picked


def vm_file(ctx: TaskContext, spec: dict[str, Any]) -> Path | None | list[Path | None]:
    paths = spec["path"] if spec.get("multi", False) else [spec["path"]]
    found = []
    for agent_path in paths:
        host = ctx.host_path(agent_path)
        found.append(host if host.exists() else None)
    return _picked(found, spec)


def vm_command_line(ctx: TaskContext, spec: dict[str, Any]) -> str:
    result = ctx.run_shell(_command(spec), timeout=float(spec.get("timeout", 30.0)))
    if result.status in ("infra_error", "not_executed"):
        raise EnvError(f"getter command could not run: {result.stderr.strip()[:200]}")
    return result.stdout


def vm_command_error(ctx: TaskContext, spec: dict[str, Any]) -> str:
    result = ctx.run_shell(_command(spec), timeout=float(spec.get("timeout", 30.0)))
    if result.status in ("infra_error", "not_executed"):
        raise EnvError(f"getter command could not run: {result.stderr.strip()[:200]}")
    return result.stderr


def rule(ctx: TaskContext, spec: dict[str, Any]) -> Any:
    return spec["rules"]


def local_file(ctx: TaskContext, spec: dict[str, Any]) -> Path | list[Path]:
    paths = spec["path"] if spec.get("multi", False) else [spec["path"]]
    return _picked([Path(p) for p in paths], spec)


GETTERS: dict[str, Getter] = {
    "vm_file": vm_file,
    "vm_command_line": vm_command_line,
    "vm_command_error": vm_command_error,
    "rule": rule,
    "local_file": local_file,
}

# Getter types that exist in OSWorld but cannot work offline; named so the rejection says why.
NEEDS_NETWORK = {"cloud_file", "cache_file", "vm_wallpaper", "open_tabs_info", "active_url_from_accessTree"}
