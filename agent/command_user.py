"""Running the model's commands as another user than the agent, so that they cannot touch the agent or its trace.

Off unless AGENT_COMMAND_USER=UID:GID is set (the bench's docker sandbox sets it and starts the agent as root with
only the SETUID and SETGID capabilities, under no-new-privileges). Then, once the trace is open (a root-owned file
in a root-owned folder), the agent keeps root only as its real and saved uid: its effective uid becomes UID, so its
file tools act exactly as UID would. Each command (`run`, the done check) drops to UID:GID for good before it
starts: all three uids and gids, no supplementary groups, and so no capability left. A process of UID cannot write
the trace, nor signal, trace or read the memory of the agent, whose real uid stays root.
"""

from __future__ import annotations

import os
from collections.abc import Callable

ENV = "AGENT_COMMAND_USER"


def command_user() -> tuple[int, int] | None:
    """(uid, gid) from AGENT_COMMAND_USER, or None when it is not set; ValueError when it is malformed."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return None
    uid, _, gid = value.partition(":")
    try:
        user = int(uid), int(gid or uid)
    except ValueError:
        raise ValueError(f"{ENV}={value!r}: expected UID:GID, two numbers") from None
    if 0 in user:
        raise ValueError(f"{ENV}={value!r}: commands must not run as root")
    return user


def check_can_switch() -> tuple[int, int] | None:
    """The command user, when the agent can become it; ValueError when one is set and the agent is not root."""
    user = command_user()
    if user is not None and os.geteuid() != 0:
        raise ValueError(f"{ENV} is set, but the agent does not run as root: it cannot switch users")
    return user


def become_agent_user() -> None:
    """Act as the command user from now on, keeping root as real and saved uid (call once, after opening the trace)."""
    user = check_can_switch()
    if user is None:
        return
    os.setgroups([])
    os.setresgid(-1, user[1], -1)
    os.setresuid(-1, user[0], -1)


def drop_to_command_user() -> Callable[[], None] | None:
    """For Popen(preexec_fn=...): in the child, become the command user for good; None when no user is set.
    It calls nothing but os functions, so it is safe even if the agent has other threads."""
    user = command_user()
    if user is None:
        return None
    uid, gid = user

    def drop() -> None:
        os.seteuid(0)  # allowed: real and saved uid are root; it brings back SETUID and SETGID for the next calls
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)

    return drop
