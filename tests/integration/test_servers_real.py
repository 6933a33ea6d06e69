"""Server kinds against the real llama-server: embedded host processes, and compose's CPU profile (python -m bench and
make up/down) under each Compose line: the docker compose plugin, the current standalone binary, Debian's v1."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.prompts import TOOL_SPECS
from agent.server import ChatClient
from bench.config import BenchConfig
from bench.containers.engine import docker_client, role_labels
from bench.containers.images import ensure_sandbox_image
from bench.containers.names import BenchNames
from bench.errors import ServerStartError
from bench.fixtures.fixture import load_fixture
from bench.llama.api import is_healthy, read_metrics, read_props
from bench.llama.binaries import find_small_model
from bench.llama.cpu_image import ensure_llama_cpu_image
from bench.llama.process import LlamaProcess, free_port
from bench.llama.reuse import of_container
from bench.ownership import new_instance_id
from bench.servers.compose import COMPOSE_PROJECT, ComposeServers
from bench.servers.embedded import EmbeddedServers

pytestmark = pytest.mark.llama
ROOT = Path(__file__).resolve().parents[2]
FIXTURES = [load_fixture("todo_repo", ROOT)]  # forced tool calls (flint_tools auto, the small model) offer its files


def test_embedded_servers_serve_the_requested_window_and_notice_a_death(tmp_path: Path) -> None:
    servers = EmbeddedServers(BenchConfig(jeff_ctx=512), tmp_path, fixtures=FIXTURES, checkout=ROOT)
    try:
        endpoints = servers.start(1024)
        assert read_props(endpoints.flint_url).n_ctx == 1024
        assert endpoints.jeff_url and read_props(endpoints.jeff_url).n_ctx == 512
        assert endpoints.flint_serving == "forced_tools"
        assert endpoints.flint.supports_tool_calls and not endpoints.jeff.supports_tool_calls  # type: ignore[union-attr]
        assert "llamacpp:prompt_tokens_total" in read_metrics(endpoints.flint_url)
        assert servers.healthy()
        assert endpoints.server_pids and set(endpoints.server_pids) == {"flint", "jeff"}
        os.kill(endpoints.server_pids["flint"], signal.SIGKILL)
        servers.flint.proc.wait(10)  # type: ignore[union-attr]
        assert not servers.healthy()
        again = servers.start(1024)  # what the runner does after a death
        assert servers.healthy() and again.flint_url != ""
    finally:
        servers.stop()
    assert not servers.healthy()


def test_a_server_answering_a_long_request_is_stopped_by_its_second_sigterm(tmp_path: Path) -> None:
    """llama-server's first SIGTERM waits for the requests in flight (here a 2,000-token answer, about 40 s on this
    CPU); the second one, a second after, ends it (exit status 1), not the SIGKILL at the end of the grace."""
    server = LlamaProcess(find_small_model(), 512, tmp_path / "server.log", threads=1)
    server.start()
    try:
        asking = threading.Thread(target=lambda: post_ignoring_errors(server.url), daemon=True)
        asking.start()
        deadline = time.monotonic() + 30
        while "processing task" not in server.log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        server.stop(grace_s=60)
    assert server.proc is not None and server.proc.returncode == 1
    assert "Received second interrupt, terminating immediately" in server.log_path.read_text()


def post_ignoring_errors(url: str) -> None:
    with contextlib.suppress(httpx.HTTPError):
        httpx.post(url + "/completion", json={"prompt": "Once upon a time", "n_predict": 2000}, timeout=120)


# From the compose sandbox network: chat, props and health pass the gates; /slots and /metrics do not; Flint's own
# server, at its address on the servers' network (argv[1]), is out of reach. By its address, not by its name: a name
# unknown on an internal network costs Docker's DNS a 10 s time-out before it fails.
GATE_PROBE = """
import json, socket, sys, urllib.error, urllib.request
def call(method, url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
def connect(host, port):
    try:
        socket.create_connection((host, port), timeout=2).close()
        return "connected"
    except Exception as e:
        return type(e).__name__
props = json.loads(call("GET", "http://flint:8080/props")[1])
chat = {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4}
print(json.dumps({
    "n_ctx": props["default_generation_settings"]["n_ctx"],
    "chat": call("POST", "http://flint:8080/v1/chat/completions", chat)[0],
    "jeff": call("GET", "http://jeff:8080/health")[0],
    "refused": {
        "slots save": call("POST", "http://flint:8080/slots/0?action=save", {"filename": "planted.bin"})[0],
        "slots erase": call("POST", "http://jeff:8080/slots/0?action=erase")[0],
        "metrics": call("GET", "http://flint:8080/metrics")[0],
        "jeff metrics": call("GET", "http://jeff:8080/metrics")[0],
    },
    "upstream": connect(sys.argv[1], 8080),
}))
"""


# Flags of the user's own for Flint: one whose value holds a space and a quote, which must stay one argument.
FLINT_OWN = ["--cache-reuse", "256", "--chat-template-kwargs", '{"note": "it\'s two words"}']


# Each Compose line runs the compose tests, spread so that none runs the same test twice with one binary: the current
# line as the `docker compose` plugin here and as a standalone binary for `make up`, Debian's v1 in both.
@pytest.mark.docker
@pytest.mark.compose
@pytest.mark.parametrize("compose_line", ["plugin", "v1"], indirect=True)
def test_compose_cpu_profile_up_reachable_from_sandbox_network_and_down(compose_line: Any, tmp_path: Path) -> None:
    client: Any = docker_client()
    image = ensure_llama_cpu_image(client, ROOT)
    names = BenchNames(new_instance_id())  # a bench's own project: other tests' compose projects run beside it
    own = BenchConfig(jeff_ctx=512, flint_server_args=FLINT_OWN, jeff_server_args=["--cache-reuse", "64"])
    servers = ComposeServers(
        own, gpu=False, cpu_image=image, log_dir=tmp_path, names=names, fixtures=FIXTURES, checkout=ROOT
    )
    try:
        endpoints = servers.start(1024)
        # The user's own flags end each service's command, split as a shell would (a quoted value with a space and
        # a quote in it stays one argument), and the settings the row takes are read from the container.
        flint_args = client.api.inspect_container(endpoints.server_containers["flint"])["Args"]
        assert flint_args[-len(FLINT_OWN) :] == FLINT_OWN and flint_args[0] == "-m"
        assert client.api.inspect_container(endpoints.server_containers["jeff"])["Args"][-2:] == ["--cache-reuse", "64"]
        assert of_container(client, endpoints.server_containers["flint"]).cache_reuse == 256  # type: ignore[union-attr]
        assert servers.cli == compose_line  # and compose.log says so, for every command it ran
        assert (
            f"{compose_line.label}: up -d --force-recreate flint-cpu jeff-cpu -> exit 0"
            in (tmp_path / "compose.log").read_text()
        )
        assert servers.healthy()
        assert read_props(endpoints.flint_url).n_ctx == 1024
        # The template and grammar mounted from the serving folder: Flint answers with a tool call.
        assert endpoints.flint_serving == "forced_tools" and endpoints.flint.supports_tool_calls
        answer = ChatClient(endpoints.flint_url, timeout=120).chat(
            {"messages": [{"role": "user", "content": "Look around."}], "tools": TOOL_SPECS, "temperature": 0}
        )
        assert answer.finish_reason == "tool_calls" and answer.message["tool_calls"][0]["function"]["name"]
        assert endpoints.server_containers and all(endpoints.server_containers.values())
        assert endpoints.gates is not None and endpoints.gates.network == f"{names.compose_project}_sandbox"
        upstream = client.containers.get(endpoints.server_containers["flint"]).attrs["NetworkSettings"]["Networks"]
        assert endpoints.gates.network not in upstream  # Flint's server is on the servers' network only
        (address,) = [n["IPAddress"] for n in upstream.values()]
        output = client.containers.run(
            ensure_sandbox_image(client, ROOT),
            ["python3", "-c", GATE_PROBE, address],
            network=endpoints.gates.network,
            remove=True,
            labels=role_labels("sandbox"),
        )
        result = json.loads(output.decode().strip().splitlines()[-1])
        assert result["n_ctx"] == 1024 and result["chat"] == 200 and result["jeff"] == 200
        assert result["refused"] == {"slots save": 403, "slots erase": 403, "metrics": 403, "jeff metrics": 403}
        assert result["upstream"] != "connected"  # the servers themselves are not on the sandbox network
    finally:
        servers.stop()
    assert project_containers(names.compose_project) == ""


def project_containers(project: str = COMPOSE_PROJECT) -> str:
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={project}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return left.stdout.strip()


@pytest.mark.docker
@pytest.mark.compose
@pytest.mark.fixed_names  # `make up` is one set of servers per host: the fixed `agentbench` compose project
@pytest.mark.slow
@pytest.mark.parametrize("compose_line", ["standalone", "v1"], indirect=True)
def test_make_up_serves_flint_and_jeff_and_make_down_removes_them(compose_line: Any) -> None:
    flint_port, jeff_port = free_port(), free_port()
    env = dict(os.environ) | {"FLINT_PORT": str(flint_port), "JEFF_PORT": str(jeff_port)}
    try:
        up = subprocess.run(["make", "up", "CTX=1024"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-2000:]
        assert f"compose servers via {compose_line.label}" in up.stderr
        assert read_props(f"http://127.0.0.1:{flint_port}").n_ctx == 1024
        assert is_healthy(f"http://127.0.0.1:{jeff_port}")
    finally:
        down = subprocess.run(["make", "down"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert down.returncode == 0, down.stdout[-2000:] + down.stderr[-2000:]
    assert not is_healthy(f"http://127.0.0.1:{flint_port}")
    assert project_containers() == ""


@pytest.mark.docker
@pytest.mark.compose
@pytest.mark.parametrize("compose_line", ["v1"], indirect=True)
def test_a_compose_server_whose_model_cannot_load_is_refused_at_once(compose_line: Any, tmp_path: Path) -> None:
    """A model file that is not a GGUF: llama-server exits at load, and the bench says so within seconds with the
    server's last log line, not after the whole start timeout (600 s by default)."""
    models = tmp_path / "models"
    models.mkdir()
    (models / "flint.gguf").write_bytes(b"this is not a GGUF file\n" * 100)
    os.link(find_small_model(), models / "jeff.gguf")  # compose mounts one models folder for both
    config = BenchConfig(
        cpu_models="configured", models_dir=str(models), flint_model="flint.gguf", jeff_model="jeff.gguf", jeff_ctx=512
    )
    names = BenchNames(new_instance_id())
    servers = ComposeServers(
        config,
        gpu=False,
        cpu_image=ensure_llama_cpu_image(docker_client(), ROOT),
        log_dir=tmp_path,
        names=names,
        checkout=ROOT,
    )
    started = time.monotonic()
    with pytest.raises(ServerStartError, match=r"flint exited with status \d+ while loading.*its log says: \S"):
        servers.start(1024)
    assert time.monotonic() - started < 30
    assert project_containers(names.compose_project) == ""
