"""A stand-in CUDA llama-server on a recorded host ($AGENTBENCH_HOST): started as `llama-server ARGS...` by the bench
(LLAMA_SERVER points at a wrapper that runs this), it sees the devices CUDA would show it under its own
CUDA_VISIBLE_DEVICES (recorded.Host.cuda_devices), logs what llama.cpp logs about them at -lv 4, answers
`--list-devices` as llama.cpp does, and serves the bench's requests with the scripted llama-server double
(bench.testing.fake_llama) at the window its -c asked for. It records its environment in $AGENTBENCH_SERVER_LOG.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path

from bench.testing.fake_llama import FakeLlama

# tests/, for host_matrix.recorded: only once the bench package is imported, or tests/bench would stand in for it
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from host_matrix.recorded import Host, device_listing, startup_log  # noqa: E402


def argument(args: list[str], flag: str, default: str) -> str:
    return args[args.index(flag) + 1] if flag in args else default


def main(args: list[str]) -> int:
    seen = Host.from_env().cuda_devices(os.environ.get("CUDA_VISIBLE_DEVICES"))
    if "--list-devices" in args:
        print(device_listing(seen), end="", flush=True)
        if isinstance(seen, str):
            print(seen, file=sys.stderr)
        return 0
    if "--version" in args:
        print("version: 11434 (build 11434, commit 0000000)")
        return 0
    record = os.environ.get("AGENTBENCH_SERVER_LOG")
    if record:
        entry = {"args": args, "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES")}
        with open(record, "a") as log:
            log.write(json.dumps(entry) + "\n")
    print(startup_log(seen), end="", file=sys.stderr, flush=True)
    model = argument(args, "-m", "model.gguf")
    fake = FakeLlama(
        [],
        n_ctx=int(argument(args, "-c", "4096")),
        host=argument(args, "--host", "127.0.0.1"),
        port=int(argument(args, "--port", "8080")),
        model_path=model,
        build_info="b11434-0000000",
    )
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    with fake:
        stopped.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
