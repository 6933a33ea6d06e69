"""Landlock (Linux 5.13 and later): a process confines itself, and every process it starts, to the folders it names.

Grading uses it twice (docs/security.md): the process that runs a library's code under test keeps reads and writes
to its own copy of the repository and the session's temporary folder, and reaches no TCP port and (ABI 6) no signal
or abstract socket outside itself; the grading pytest, once its tests are collected, keeps its writes (and those of
the programs its tests run) to the repository copy, the temporary folder and its report folder, so nothing can be
written where its modules came from. A kernel without Landlock (or a container whose seccomp profile refuses it)
leaves the process as it was: `confine` says so instead of failing.

Standard library only (ctypes): it runs in the sandbox image's python3, copied into the grading folder.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
from typing import Any

CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446  # the same numbers on every architecture
VERSION_FLAG = 1  # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION): the ABI version
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG = 1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8
MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15  # ABI 2, 3 and 5
READS = EXECUTE | READ_FILE | READ_DIR
FILE_RIGHTS = (
    EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
)  # the rights a rule on a file (not a folder) takes
NET_TCP = 0b11  # bind and connect (ABI 4)
SCOPE_ALL = 0b11  # abstract unix sockets and signals (ABI 6)


def _syscall() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc.syscall


def abi_version() -> int:
    """The kernel's Landlock ABI (1 and up), or 0 where there is none."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        version = _syscall()(CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(VERSION_FLAG))
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def fs_rights(abi: int) -> int:
    """Every filesystem right the ABI knows."""
    rights = (1 << 13) - 1
    rights |= REFER if abi >= 2 else 0
    rights |= TRUNCATE if abi >= 3 else 0
    return rights | (IOCTL_DEV if abi >= 5 else 0)


def _ruleset(abi: int, handled: int, deny_network: bool) -> bytes:
    net = NET_TCP if deny_network and abi >= 4 else 0
    if abi >= 6:
        return struct.pack("=QQQ", handled, net, SCOPE_ALL if deny_network else 0)
    return struct.pack("=QQ", handled, net) if abi >= 4 else struct.pack("=Q", handled)


def confine(readable: list[str], writable: list[str], *, limit_reads: bool, deny_network: bool = False) -> str | None:
    """Confine this process: writes only beneath `writable`; with `limit_reads`, reads and execution only beneath
    `readable` and `writable` too; with `deny_network`, no TCP and no signal or abstract socket outside it.
    Returns None once confined, or why it is not (no Landlock here, a failed call)."""
    abi = abi_version()
    if abi < 1:
        return "this kernel has no Landlock (or the container's seccomp profile refuses it)"
    everything = fs_rights(abi)
    handled = everything if limit_reads else everything & ~(READS | IOCTL_DEV)
    syscall = _syscall()
    attr = _ruleset(abi, handled, deny_network)
    ruleset = syscall(CREATE_RULESET, attr, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        return f"landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}"
    try:
        rules = [(path, handled) for path in writable] + [(path, READS & handled) for path in readable if limit_reads]
        for path, rights in rules:
            problem = _add_rule(syscall, int(ruleset), path, rights)
            if problem:
                return problem
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        if syscall(RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return f"landlock_restrict_self failed: {os.strerror(ctypes.get_errno())}"
    finally:
        os.close(int(ruleset))
    return None


def _add_rule(syscall: Any, ruleset: int, path: str, rights: int) -> str | None:
    """Allow `rights` beneath `path` (a file gets only the rights a file can have); a missing path is skipped."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not os.path.isdir(path):
            rights &= FILE_RIGHTS
        beneath = struct.pack("=Qi", rights, fd)
        if syscall(ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), beneath, ctypes.c_uint32(0)) != 0:
            return f"landlock_add_rule failed for {path}: {os.strerror(ctypes.get_errno())}"
    finally:
        os.close(fd)
    return None
