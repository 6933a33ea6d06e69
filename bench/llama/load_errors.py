"""Why a llama-server died while loading, in one line: the line of its log that says so, and what to do where the
cause is known (a driver that cannot load the build's kernels, bench/llama/cuda_compat.py)."""

from __future__ import annotations

from bench.llama.cuda_compat import COMPRESSION_FLAG, LLAMA_DEFAULT_COMPRESSION, NEW_COMPRESSION

INVALID_IMAGE = "device kernel image is invalid"  # CUDA's words for kernels this driver cannot load


def load_failure(log: str) -> str:
    """What to do about a server that died because the driver could not load its kernels; "" for other deaths."""
    if INVALID_IMAGE not in log:
        return ""
    floor = NEW_COMPRESSION[LLAMA_DEFAULT_COMPRESSION]
    return (
        f"this driver cannot load the build's kernels: a CUDA 12.8+ llama.cpp build compressed with llama.cpp's "
        f"default -compress-mode=size needs driver {floor} or later; use the bench's own builds (compressed with "
        f"{COMPRESSION_FLAG}: the default llama_image, make setup GPU=cuda) or update the driver"
    )


def telling_line(log: str) -> str:
    """The line of a server's log that says why it failed: its first CUDA error where there is one (a crash goes on
    to print a backtrace), else the last line."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    cuda = [line for line in lines if "CUDA error:" in line]
    return cuda[0] if cuda else (lines[-1] if lines else "(its log is empty)")


def why_it_died(log: str) -> str:
    """The telling line, then what to do about it where that is known."""
    hint = load_failure(log)
    return telling_line(log) + (f"; {hint}" if hint else "")
