"""`push_to_hub` against a local stand-in of the Hugging Face Hub HTTP API (no network).

The stand-in implements only the routes the installed `huggingface_hub` calls for `create_repo(exist_ok=True)`,
`list_repo_files` and `create_commit` of small files (route shapes read from `huggingface_hub/hf_api.py` and
`_commit_api.py`): `POST /api/repos/create`, `GET /api/datasets/<repo>/tree/<rev>`, `POST /api/validate-yaml`,
`POST /api/datasets/<repo>/preupload/<rev>` (always "regular", so no LFS/Xet transfer) and the ndjson
`POST /api/datasets/<repo>/commit/<rev>`. Any other request is recorded and fails the test, so a client upgrade
that starts calling something new shows up here instead of passing silently.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from PIL import Image as PILImage

from synth.images import ImageStore
from synth.publish import PublishConfig, publish_dataset, push_to_hub
from synth.schema import CliAction, Control, GuiAction, MouseOp, Screen, Source, Step, Trajectory

REPO_ID = "me/switchyard-demo"
TOKEN = "hf_standin_token"
# what the real Hub puts in a new repo; build_operations must leave it alone
GITATTRIBUTES = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"


def _git_blob_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Commit:
    oid: str
    summary: str
    added: list[str]
    deleted: list[str]


@dataclass
class HubState:
    repos: dict[str, dict[str, bytes]] = field(default_factory=dict)
    private: dict[str, bool] = field(default_factory=dict)
    commits: list[Commit] = field(default_factory=list)
    unhandled: list[str] = field(default_factory=list)
    bad_auth: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _handler(state: HubState) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format, *args):  # keep pytest output clean
            pass

        def _send(self, status: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length", 0)))

        def _route(self) -> tuple[str, str, str] | None:
            """(action, repo_id, revision) for `/api/datasets/<ns>/<name>/<action>/<rev>`."""
            parts = urlsplit(self.path).path.split("/")
            if len(parts) >= 7 and parts[:3] == ["", "api", "datasets"]:
                return parts[5], f"{parts[3]}/{parts[4]}", unquote(parts[6])
            return None

        def _unhandled(self) -> None:
            state.unhandled.append(f"{self.command} {self.path}")
            self._send(404, {"error": f"stand-in has no route for {self.command} {self.path}"})

        def _check_auth(self) -> None:
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                state.bad_auth.append(f"{self.command} {self.path}")

        def do_GET(self):
            self._check_auth()
            route = self._route()
            if route is None or route[0] != "tree" or route[2] != "main":
                return self._unhandled()
            files = state.repos.get(route[1])
            if files is None:
                return self._send(404, {"error": "Repository not found"})
            with state.lock:
                listing = [
                    {"type": "file", "path": p, "size": len(d), "oid": _git_blob_oid(d)}
                    for p, d in sorted(files.items())
                ]
            self._send(200, listing)

        def do_POST(self):
            self._check_auth()
            body = self._body()
            path = urlsplit(self.path).path
            if path == "/api/repos/create":
                payload = json.loads(body)
                repo_id = f"{payload['organization']}/{payload['name']}"
                if payload.get("type") != "dataset":
                    return self._send(400, {"error": "stand-in only hosts datasets"})
                url = f"{self._endpoint()}/datasets/{repo_id}"
                with state.lock:
                    if repo_id in state.repos:
                        # like the Hub, the 409 still carries the url: create_repo(exist_ok=True) reads it
                        return self._send(409, {"error": "You already created this dataset repo", "url": url})
                    state.repos[repo_id] = {".gitattributes": GITATTRIBUTES}
                    state.private[repo_id] = payload.get("visibility") == "private"
                return self._send(200, {"url": url})
            if path == "/api/validate-yaml":
                return self._send(200, {"errors": [], "warnings": []})
            route = self._route()
            if route is None or route[2] != "main" or route[1] not in state.repos:
                return self._unhandled()
            action, repo_id, _ = route
            if action == "preupload":
                files = json.loads(body)["files"]
                return self._send(
                    200,
                    {
                        "files": [
                            {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files
                        ]
                    },
                )
            if action == "commit":
                return self._commit(repo_id, body)
            return self._unhandled()

        def _endpoint(self) -> str:
            host, port = self.server.server_address[:2]
            return f"http://{host}:{port}"

        def _commit(self, repo_id: str, body: bytes) -> None:
            if self.headers.get("Content-Type") != "application/x-ndjson":
                return self._send(400, {"error": "commit body must be ndjson"})
            lines = [json.loads(line) for line in body.splitlines() if line.strip()]
            header, ops = lines[0], lines[1:]
            if header["key"] != "header":
                return self._send(400, {"error": "first ndjson line must be the header"})
            added, deleted = [], []
            with state.lock:
                files = dict(state.repos[repo_id])
                for op in ops:
                    value = op["value"]
                    if op["key"] == "file" and value["encoding"] == "base64":
                        files[value["path"]] = base64.b64decode(value["content"])
                        added.append(value["path"])
                    elif op["key"] == "deletedFile":
                        if value["path"] not in files:
                            return self._send(404, {"error": "A file with this name doesn't exist"})
                        del files[value["path"]]
                        deleted.append(value["path"])
                    else:
                        # lfsFile etc.: this stand-in never asked for LFS, so receiving one is a bug
                        return self._send(400, {"error": f"unsupported commit operation {op['key']}"})
                oid = hashlib.sha1(f"{len(state.commits)}:{sorted(files)}".encode()).hexdigest()
                state.repos[repo_id] = files
                state.commits.append(Commit(oid, header["value"]["summary"], added, deleted))
            self._send(
                200,
                {"commitUrl": f"{self._endpoint()}/datasets/{repo_id}/commit/{oid}", "commitOid": oid},
            )

    return Handler


@pytest.fixture
def hub() -> Iterator[tuple[str, HubState]]:
    state = HubState()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _png(seed: int, size=(48, 32)) -> bytes:
    rnd = random.Random(seed)
    img = PILImage.new("RGB", size)
    img.putdata([tuple(rnd.randrange(256) for _ in range(3)) for _ in range(size[0] * size[1])])
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def _records(store: ImageStore) -> list[Trajectory]:
    refs = [store.put(_png(i)) for i in range(3)]
    screen = Screen(width=1280, height=720)
    return [
        Trajectory(
            id="h1",
            source=Source(dataset="agentnet", record_id="a-1"),
            instruction="Count lines in notes.txt",
            screen=screen,
            mode="hybrid",
            steps=[
                Step(index=0, screenshot=refs[0], action=GuiAction(ops=[MouseOp(op="click", x=10, y=20)])),
                Step(index=1, screenshot=refs[1], action=CliAction(command="wc -l notes.txt")),
                Step(index=2, action=Control(kind="answer", value="3")),
            ],
        ),
        Trajectory(
            id="c1",
            source=Source(dataset="agentnet", record_id="a-2"),
            instruction="List files",
            screen=screen,
            mode="cli",
            steps=[Step(index=0, screenshot=refs[2], action=CliAction(command="ls"))],
        ),
    ]


def _local(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def test_push_uploads_folder_in_one_commit_and_second_push_deletes_stale_shards(tmp_path, hub):
    endpoint, state = hub
    store = ImageStore(tmp_path / "images")
    records = _records(store)
    out = tmp_path / "ds"
    # one trajectory per shard, so the first publish has several data/ files to go stale
    tiny = PublishConfig(repo_id=REPO_ID, max_shard_mb=1e-6, trajectory_row_group=1, step_row_group=1)
    report = publish_dataset(records, [], store, out, tiny)
    assert len(report.files["trajectories"]) == 2 and len(report.files["steps"]) == 4

    sha = push_to_hub(out, REPO_ID, token=TOKEN, private=True, commit_message="first", endpoint=endpoint)

    assert state.unhandled == [] and state.bad_auth == []
    (commit,) = state.commits
    assert sha == commit.oid and len(sha) == 40 and int(sha, 16) >= 0
    assert commit.summary == "first" and commit.deleted == []
    assert state.private[REPO_ID] is True
    first = _local(out)
    assert sorted(commit.added) == sorted(first)
    assert state.repos[REPO_ID] == {".gitattributes": GITATTRIBUTES, **first}  # byte-identical

    again = publish_dataset(records[:1], [], store, out, PublishConfig(repo_id=REPO_ID, include_steps=False))
    assert again.files == {"trajectories": ["data/trajectories/train-00000-of-00001.parquet"]}
    sha2 = push_to_hub(out, REPO_ID, token=TOKEN, private=False, commit_message="second", endpoint=endpoint)

    assert state.unhandled == [] and state.bad_auth == []
    assert [c.oid for c in state.commits] == [sha, sha2] and sha2 != sha
    second = _local(out)
    stale = sorted(set(first) - set(second))
    # every first-publish shard was renamed `-of-00001` or dropped with the steps config
    assert stale == sorted(report.files["trajectories"] + report.files["steps"])
    assert sorted(state.commits[1].deleted) == stale
    assert sorted(state.commits[1].added) == sorted(second)
    assert state.repos[REPO_ID] == {".gitattributes": GITATTRIBUTES, **second}
    assert state.private[REPO_ID] is True  # exist_ok: the existing repo is not recreated
