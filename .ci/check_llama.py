#!/usr/bin/env python3
"""make setup's last step: start the installed llama-server with the small model and get one completed token; and
a CUDA build must list the GPU that NVML sees, or set-up fails in one line (never a quiet CPU fallback).

A llama.cpp build that does not match this CPU dies of an illegal instruction (SIGILL) on its first matrix multiply.
Say so here, in one line with the fix, rather than as a dozen failing tests fifteen minutes later.
Usage: .venv/bin/python .ci/check_llama.py WHEEL_FOLDER   (the folder the build came from, named in the fix)
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench.errors import PrerequisiteError
from bench.llama.binaries import find_llama_server, find_small_model, llama_env
from bench.servers.choose import embedded_on_gpu, list_devices, llama_backend

START_TIMEOUT_S = 120.0


class CheckFailed(Exception):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def death(proc: subprocess.Popen[bytes], log: Path, wheels: str) -> CheckFailed:
    """Why the server died, in one line, with the fix."""
    if proc.returncode == -signal.SIGILL:
        return CheckFailed(
            f"llama-server died of an illegal instruction (SIGILL): the llama.cpp build in {wheels} uses instructions "
            f"this CPU does not run; fix: `rm -rf {wheels} .venv/.cpu-stack && make setup` to rebuild it (a CPU "
            "without AVX2 also needs LLAMA_CMAKE_ARGS without -DGGML_AVX2=ON)"
        )
    lines = log.read_text(errors="replace").strip().splitlines() or ["(empty log)"]
    return CheckFailed(f"llama-server exited with status {proc.returncode}; last log line: {lines[-1][-300:]} ({log})")


def get(url: str, timeout: float, body: dict[str, object] | None = None) -> dict[str, object]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        answer: dict[str, object] = json.load(response)
        return answer


def one_token(proc: subprocess.Popen[bytes], url: str, log: Path, wheels: str) -> dict[str, object]:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise death(proc, log, wheels)
        try:
            get(f"{url}/health", 2)
            break
        except (OSError, urllib.error.URLError, ValueError):
            time.sleep(0.3)
    else:
        raise CheckFailed(f"llama-server was not healthy after {START_TIMEOUT_S:.0f}s (log: {log})")
    try:
        answer = get(f"{url}/completion", 60, {"prompt": "The capital of France is", "n_predict": 1})
    except (OSError, urllib.error.URLError, ValueError) as e:
        if proc.poll() is not None or _died_within(proc, 2):
            raise death(proc, log, wheels) from e
        raise CheckFailed(f"llama-server did not answer a completion: {e} (log: {log})") from e
    if answer.get("tokens_predicted") != 1:
        raise CheckFailed(f"llama-server answered without a completed token: {json.dumps(answer)[:300]}")
    return answer


def _died_within(proc: subprocess.Popen[bytes], seconds: float) -> bool:
    try:
        proc.wait(seconds)
        return True
    except subprocess.TimeoutExpired:
        return False


def check(wheels: str) -> str:
    server, model = find_llama_server(), find_small_model()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = Path(tempfile.mkstemp(prefix="agentbench-check-llama-", suffix=".log")[1])
    cmd = [str(server), "-m", str(model), "-c", "512", "-np", "1", "--no-webui", "--port", str(port)]
    started = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=llama_env(server))
    try:
        answer = one_token(proc, url, log, wheels)
    finally:
        if proc.poll() is None:
            proc.terminate()
            if not _died_within(proc, 10):
                proc.kill()
                proc.wait()
    log.unlink()
    took = time.monotonic() - started
    return f"llama-server check: {server} answered 1 token ({answer.get('content')!r}) in {took:.1f}s"


def check_gpu() -> str:
    """A CUDA build must see the GPU NVML sees (bench.servers.choose.check_cuda_build raises when it does not)."""
    devices, _ = list_devices()
    if not devices:
        embedded_on_gpu()  # the one-line error for a CUDA build blind to the host's GPU
        return f"llama-server check: {llama_backend() or 'unknown'} build, no GPU device listed"
    return f"llama-server check: it runs on {devices[0]}"


def main() -> int:
    wheels = sys.argv[1] if len(sys.argv) > 1 else "the wheel cache"
    try:
        print(check(wheels))
        print(check_gpu())
    except (CheckFailed, PrerequisiteError) as e:
        print(f"make setup: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
