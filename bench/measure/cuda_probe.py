"""A known GPU allocation in another process, through the CUDA driver API (libcuda, ctypes): what the memory
sampler must see, for `make gpu-rehearsal` and `make gpu-check`.

`python -m bench.measure.cuda_probe BYTES [--depth 2]` creates a CUDA context (cuInit, cuDeviceGet, cuCtxCreate) on
device 0 of CUDA_VISIBLE_DEVICES, allocates BYTES with cuMemAlloc (none for 0: the bare context), prints
`ready <pid>` and holds it until stdin closes or says anything. With --depth 2 it starts a child that does so (the
allocation is then in a grandchild of the caller, as a server's worker process would be). A failed call prints
`error <call> <CUresult>` and exits 1. Standard library only: it runs where the bench's dependencies are absent.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import subprocess
import sys
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


@contextlib.contextmanager
def held(n_bytes: int, depth: int = 1, device: str = "", cwd: str | None = None) -> Iterator[Held]:
    """Run the probe and keep its allocation while the block runs; ProbeError says which CUDA call failed."""
    env = dict(os.environ) | ({"CUDA_VISIBLE_DEVICES": device} if device else {})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [cwd or os.getcwd(), env.get("PYTHONPATH", "")]))
    args = [sys.executable, "-m", "bench.measure.cuda_probe", str(n_bytes), "--depth", str(depth)]
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd)
    assert proc.stdout is not None and proc.stdin is not None
    try:
        line = proc.stdout.readline().decode().strip()
        if not line.startswith("ready "):
            raise ProbeError(line or f"the probe exited with status {proc.wait(READY_TIMEOUT_S)} before it was ready")
        yield Held(proc.pid, int(line.split()[1]))
    finally:
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


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
