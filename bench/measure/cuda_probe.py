"""A known GPU allocation in another process, through the CUDA driver API (libcuda, ctypes): what the memory
sampler must see, for `make gpu-rehearsal` and `make gpu-check`.

`python -m bench.measure.cuda_probe BYTES [--depth 2]` creates a CUDA context (cuInit, cuDeviceGet, cuCtxCreate) on
device 0 of CUDA_VISIBLE_DEVICES, allocates BYTES with cuMemAlloc (none for 0: the bare context), prints
`ready <pid>` and holds it until stdin closes or says anything. With --depth 2 it starts a child that does so (the
allocation is then in a grandchild of the caller, as a server's worker process would be). A failed call prints
`error <call> <CUresult>` and exits 1. Standard library only: it runs where the bench's dependencies are absent.
The caller waits for `ready` a bounded time (a probe stuck in a CUDA call is killed with its whole session, the
grandchild included), never a bare readline.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

LIBCUDA = os.environ.get("AGENTBENCH_LIBCUDA", "libcuda.so.1")  # tests point it at a stand-in
READY_TIMEOUT_S = 120.0


class ProbeError(Exception):
    pass


def allocate(n_bytes: int) -> None:
    """This process: a context on device 0 and `n_bytes` allocated; reports `ready`, holds until told."""
    cuda = ctypes.CDLL(LIBCUDA)
    device, context, pointer = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()

    def check(result: int, call: str) -> None:
        if result != 0:
            print(f"error {call} {result}", flush=True)
            sys.exit(1)

    check(cuda.cuInit(0), "cuInit")
    check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    check(cuda.cuCtxCreate_v2(ctypes.byref(context), 0, device), "cuCtxCreate_v2")
    if n_bytes:
        check(cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(n_bytes)), "cuMemAlloc_v2")
    print(f"ready {os.getpid()}", flush=True)
    sys.stdin.readline()
    if n_bytes:
        cuda.cuMemFree_v2(pointer)
    cuda.cuCtxDestroy_v2(context)


def relay(n_bytes: int) -> None:
    """This process: a child that allocates; its `ready` line is passed on, and so is the end of stdin."""
    with subprocess.Popen(
        [sys.executable, "-m", "bench.measure.cuda_probe", str(n_bytes)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as child:
        assert child.stdout is not None and child.stdin is not None
        print(child.stdout.readline().decode().strip(), flush=True)
        sys.stdin.readline()
        child.stdin.close()
    sys.exit(child.returncode)


@dataclass(frozen=True)
class Held:
    caller_pid: int  # the process this side started (the one a matcher knows)
    holder_pid: int  # the process holding the memory (the same, or its child)


def first_line(proc: subprocess.Popen[bytes], timeout_s: float) -> str:
    """The probe's first line, waited for at most `timeout_s`; "" when it ended without one."""
    assert proc.stdout is not None
    fd, data, deadline = proc.stdout.fileno(), b"", time.monotonic() + timeout_s
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while b"\n" not in data:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                raise ProbeError(f"the probe said nothing for {timeout_s:.0f} s (stuck in a CUDA call?): killed")
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    return data.decode(errors="replace").split("\n")[0].strip()


def stop(proc: subprocess.Popen[bytes], grace_s: float = 30.0) -> None:
    """Let the probe free its memory and exit; kill its whole session when it does not within `grace_s`."""
    assert proc.stdout is not None and proc.stdin is not None
    with contextlib.suppress(OSError):
        proc.stdin.close()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    proc.stdout.close()


@contextlib.contextmanager
def held(
    n_bytes: int, depth: int = 1, device: str = "", cwd: str | None = None, ready_timeout_s: float = READY_TIMEOUT_S
) -> Iterator[Held]:
    """Run the probe and keep its allocation while the block runs; ProbeError says which CUDA call failed, or that
    the probe was not ready within `ready_timeout_s`."""
    env = dict(os.environ) | ({"CUDA_VISIBLE_DEVICES": device} if device else {})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [cwd or os.getcwd(), env.get("PYTHONPATH", "")]))
    args = [sys.executable, "-m", "bench.measure.cuda_probe", str(n_bytes), "--depth", str(depth)]
    proc = subprocess.Popen(
        args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd, start_new_session=True
    )
    ready = False
    try:
        line = first_line(proc, ready_timeout_s)
        if not line.startswith("ready "):
            raise ProbeError(line or f"the probe exited with status {proc.wait(30)} before it was ready")
        ready = True
        yield Held(proc.pid, int(line.split()[1]))
    finally:
        stop(proc, 30.0 if ready else 0.5)  # a probe that never got ready is not waited for


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.measure.cuda_probe", description=__doc__)
    parser.add_argument("bytes", type=int)
    parser.add_argument("--depth", type=int, choices=[1, 2], default=1)
    args = parser.parse_args(argv)
    if args.depth == 2:
        relay(args.bytes)
    else:
        allocate(args.bytes)


if __name__ == "__main__":
    main()
