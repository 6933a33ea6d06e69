"""No Unix socket in grading: a seccomp filter that the grading supervisor and everything it starts inherit.

Landlock (bench/score/landlock.py) confines files, TCP and signals, but not connecting to a Unix socket by its path:
the Docker engine's socket, where the grading user may use it, is a way to a container that reads the hidden tests
(or anything else of this machine). So before the supervisor starts, its process installs a filter that refuses
`socket(AF_UNIX, ...)` with EACCES, and `io_uring_setup` (whose requests create sockets without that system call),
and every system call of another architecture's table (i386 or x32 on x86-64, where `socketcall` lives). Sockets
already paired (`socketpair`, which reach no path) and pipes still work. A filter cannot be removed, and passes on
to every child: plain pytest, the code under test's process and the programs the tests run.

The graders start `python -I -B -c BOOT SUPERVISOR_SOURCE`: BOOT installs the filter (where it cannot, the code's
process reports its Unix sockets open, and the row says so: bench/score/tamper.py) and then executes the supervisor
in the same process. Standard library only (ctypes): it runs in the sandbox image's python3.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import socket
import struct

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
LOAD_WORD, JUMP_EQUAL, JUMP_AT_LEAST, RETURN = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ/JGE|K, BPF_RET|K
ALLOW, REFUSE = 0x7FFF0000, 0x00050000 | errno.EACCES  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | errno
NUMBER, ARCH, FIRST_ARGUMENT = 0, 4, 16  # offsets in struct seccomp_data (the argument's low half: little-endian)
X32_BIT = 0x40000000
IO_URING_SETUP = 425  # the same number on both architectures
# machine -> (AUDIT_ARCH_*, the number of socket)
MACHINES = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198), "arm64": (0xC00000B7, 198)}


def _program(arch: int, socket_number: int) -> list[tuple[int, int, int, int]]:
    """(code, jump if true, jump if false, constant) instructions; jumps count the instructions skipped."""
    return [
        (LOAD_WORD, 0, 0, ARCH),
        (JUMP_EQUAL, 0, 7, arch),  # another architecture's table: refused
        (LOAD_WORD, 0, 0, NUMBER),
        (JUMP_AT_LEAST, 5, 0, X32_BIT),  # x32's numbers
        (JUMP_EQUAL, 4, 0, IO_URING_SETUP),
        (JUMP_EQUAL, 0, 2, socket_number),
        (LOAD_WORD, 0, 0, FIRST_ARGUMENT),
        (JUMP_EQUAL, 1, 0, socket.AF_UNIX),
        (RETURN, 0, 0, ALLOW),
        (RETURN, 0, 0, REFUSE),
    ]


def install() -> str | None:
    """Refuse new Unix sockets to this process and its children from now on; None once done, else why not."""
    machine = platform.machine()
    if machine not in MACHINES or not hasattr(os, "fork"):
        return f"no socket filter for this machine ({machine or 'unknown'})"
    code = b"".join(struct.pack("=HBBI", *instruction) for instruction in _program(*MACHINES[machine]))
    instructions = ctypes.create_string_buffer(code, len(code))
    fprog = struct.pack("=HxxxxxxQ", len(code) // 8, ctypes.addressof(instructions))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        return f"no_new_privs refused: {os.strerror(ctypes.get_errno())}"
    program = ctypes.create_string_buffer(fprog, len(fprog))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(program), 0, 0) != 0:
        return f"seccomp refused: {os.strerror(ctypes.get_errno())}"
    return None
