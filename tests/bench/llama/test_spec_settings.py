"""How Flint drafts, read from how llama-server was started: --spec-type and the draft model, from the command line
or the LLAMA_ARG_* variables b11434 reads (the command line wins)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.llama.spec_settings import SpecSettings, from_command, of_server
from bench.results.row import ResultRow
from bench.results.schema import SETUP_COLUMNS


def test_no_spec_flags_is_none_and_the_flags_are_read_in_any_spelling() -> None:
    assert from_command(["-m", "x.gguf", "-c", "1024"]) == SpecSettings("none", "")
    assert from_command(["--spec-type", "ngram-simple"]) == SpecSettings("ngram-simple", "")
    assert from_command(["--spec_type=NGRAM-MOD"]).spec_type == "ngram-mod"
    draft = from_command(["-md", "/models/draft-0.5b.gguf", "--spec-type", "draft-simple"])
    assert draft == SpecSettings("draft-simple", "draft-0.5b.gguf")
    assert from_command(["--spec-draft-model=/m/d.gguf"]).draft_model == "d.gguf"


def test_a_list_of_types_drops_none_as_the_server_reports_it() -> None:
    assert from_command(["--spec-type", "none,ngram-simple"]).spec_type == "ngram-simple"
    assert from_command(["--spec-type", "none"]).spec_type == "none"
    assert from_command(["--spec-type", "ngram-mod, draft-simple"]).spec_type == "ngram-mod,draft-simple"


def test_the_command_line_wins_over_the_environment() -> None:
    env = {"LLAMA_ARG_SPEC_TYPE": "ngram-cache", "LLAMA_ARG_SPEC_DRAFT_MODEL": "/m/small.gguf"}
    assert from_command([], env) == SpecSettings("ngram-cache", "small.gguf")
    assert from_command(["--spec-type", "ngram-mod"], env) == SpecSettings("ngram-mod", "small.gguf")


def test_the_row_says_none_for_a_known_server_and_empty_for_one_not_known() -> None:
    row = ResultRow()
    SpecSettings("ngram-simple", "").fill(row)
    assert (row.text("spec_type"), row.text("draft_model")) == ("ngram-simple", "")
    assert of_server(None, None) is None  # someone else's servers: not known


@pytest.mark.usefixtures("child_processes")
def test_a_running_process_is_read_from_proc() -> None:
    code = "import time; print('ready', flush=True); time.sleep(30)"
    flags = ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "2"]
    env = {**os.environ, "LLAMA_ARG_SPEC_DRAFT_MODEL": "/models/d.gguf"}
    child = subprocess.Popen([sys.executable, "-c", code, *flags], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        assert of_server(child.pid, None) == SpecSettings("ngram-simple", "d.gguf")
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    assert of_server(child.pid, None) is None  # gone: not known


@pytest.mark.usefixtures("child_processes")
def test_a_host_servers_draft_model_is_keyed_by_its_sha256_read_from_its_working_folder(tmp_path: Path) -> None:
    """`-md draft.gguf` is the file in the server's own working folder, not the bench's; a file that is not on this
    machine (a container's path) leaves the digest empty rather than guessing."""
    (tmp_path / "draft.gguf").write_bytes(b"GGUF draft weights")
    code = "import time; print('ready', flush=True); time.sleep(30)"
    child = subprocess.Popen(
        [sys.executable, "-c", code, "--spec-type", "draft-simple", "-md", "draft.gguf"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        digest = hashlib.sha256(b"GGUF draft weights").hexdigest()
        assert of_server(child.pid, None) == SpecSettings("draft-simple", "draft.gguf", digest)
        row = ResultRow()
        SpecSettings("draft-simple", "draft.gguf", digest).fill(row)
        assert row.text("draft_model_sha256") == digest and "draft_model_sha256" in SETUP_COLUMNS
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    (tmp_path / "draft.gguf").unlink()
    assert from_command(["-md", str(tmp_path / "draft.gguf")]).draft_model_sha256 == ""
