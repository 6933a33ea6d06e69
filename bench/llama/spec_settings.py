"""Flint's speculative decoding as llama-server was started: `--spec-type` (b11434: none, draft-simple, draft-eagle3,
draft-mtp, ngram-simple, ngram-mod, ngram-cache and others, comma-separated) and the draft model (`--spec-draft-model`,
`-md`), from the command line or LLAMA_ARG_SPEC_TYPE and LLAMA_ARG_SPEC_DRAFT_MODEL (the command line wins, as in
llama-server). b11434 drafts nothing without a spec type, even with a draft model loaded. Both are keys of a
comparison: a run that drafts is never compared as like with one that does not (bench/results/speculative_columns.py);
so is the draft model's sha256, where its file is on this machine (a host server's), as Flint's own model's is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePath

from bench.llama.reuse import server_command
from bench.provenance import file_sha256
from bench.results.row import ResultRow
from bench.server_args import flag_name

TYPE_FLAGS = ("--spec-type",)
DRAFT_FLAGS = ("--spec-draft-model", "-md", "--model-draft")
TYPE_ENV, DRAFT_ENV = "LLAMA_ARG_SPEC_TYPE", "LLAMA_ARG_SPEC_DRAFT_MODEL"
OFF = "none"


@dataclass(frozen=True)
class SpecSettings:
    spec_type: str = OFF  # the types as given, `none` left out of a list of others; `none` when it drafts nothing
    draft_model: str = ""  # the draft model's file name; empty: none
    draft_model_sha256: str = ""  # empty: no draft model, or its file is not on this machine (a container's)

    def fill(self, row: ResultRow) -> None:
        row.spec_type, row.draft_model = self.spec_type, self.draft_model
        row.draft_model_sha256 = self.draft_model_sha256


def from_command(args: Sequence[str], env: Mapping[str, str] | None = None) -> SpecSettings:
    """The speculative settings of a llama-server started with `args` (its own arguments) in environment `env`."""
    spec_type, draft = _given(args, env or {})
    return SpecSettings(_types(spec_type), PurePath(draft).name if draft else "")


def _given(args: Sequence[str], env: Mapping[str, str]) -> tuple[str, str]:
    """The spec type and the draft model's path as given (the command line's last, else the environment's)."""
    spec_type, draft = env.get(TYPE_ENV, OFF), env.get(DRAFT_ENV, "")
    for i, arg in enumerate(args):
        flag, inline = flag_name(arg), arg.partition("=")[2]
        value = inline or (args[i + 1] if i + 1 < len(args) else "")
        if flag in TYPE_FLAGS:
            spec_type = value
        elif flag in DRAFT_FLAGS:
            draft = value
    return spec_type, draft


def _types(text: str) -> str:
    """`ngram-simple`, `none,ngram-mod` (as the server reports them) -> `ngram-simple`, `ngram-mod`; none: `none`."""
    types = [kind.strip().lower() for kind in text.split(",") if kind.strip()]
    return ",".join(kind for kind in types if kind != OFF) or OFF


def of_server(pid: int | None, container: str | None) -> SpecSettings | None:
    """A server's speculative settings from its host process or container; None for servers the bench did not start
    (not known: the columns stay empty)."""
    command = server_command(pid, container)
    if not command:
        return None
    settings, draft = from_command(*command), _given(*command)[1]
    found = _host_file(pid, draft) if pid and draft else None
    return replace(settings, draft_model_sha256=file_sha256(found)) if found else settings


def _host_file(pid: int, path: str) -> Path | None:
    """A host process's file `path` (a relative one from its working folder), when it is there to read."""
    try:
        found = (Path(f"/proc/{pid}/cwd") / path).resolve()
    except OSError:
        return None
    return found if found.is_file() else None
