"""llama-server flags of the user's own (bench/server_args.py): split as a shell would, every flag the bench passes
refused in one line naming the setting to use, in every spelling, and nothing the bench passes left out of that list.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from bench import ROOT
from bench.config import BenchConfig, load_config
from bench.errors import ConfigError
from bench.llama import process
from bench.llama.forced_tools import ServingFiles
from bench.llama.hub import HubRef
from bench.llama.models import JEFF_FLAGS
from bench.llama.process import LlamaProcess
from bench.server_args import (
    OWNED,
    ROLES,
    ServerArgsError,
    check_owned_flags,
    flag_name,
    owned_flags,
    parse_server_args,
)
from bench.submit.k8s import FLINT_PORT, JEFF_PORT, server

OWNED_CASES = sorted((role, flag) for role in ROLES for flag in owned_flags(role))


def test_a_line_is_split_as_a_shell_would_and_an_open_quote_is_one_line() -> None:
    line = "-fa on --chat-template-kwargs '{\"enable_thinking\": false}' --n-cpu-moe 4"
    assert parse_server_args(line) == [
        "-fa",
        "on",
        "--chat-template-kwargs",
        '{"enable_thinking": false}',
        "--n-cpu-moe",
        "4",
    ]
    with pytest.raises(ServerArgsError, match=r"^--server-args: no closing quotation in .*: close the quote$"):
        parse_server_args("-a 'flint", "--server-args")


@pytest.mark.parametrize(("role", "flag"), OWNED_CASES)
def test_every_spelling_of_a_flag_the_bench_owns_is_refused_in_one_line_naming_the_setting(
    role: str, flag: str
) -> None:
    setting = f"{role}_server_args"
    spellings = [flag, f"{flag}=1"] + ([flag.replace("-", "_").replace("__", "--", 1)] if flag.startswith("--") else [])
    for spelling in spellings:
        with pytest.raises(ConfigError) as caught:
            load_config(None, {setting: f"--cache-reuse 256 {spelling} 1"})
        message = str(caught.value)
        assert "\n" not in message and message.startswith(f"the command line: {setting} = "), message
        owner = next(o for o in OWNED if flag in o.flags.split() and role in o.roles)
        assert f"{spelling} ({owner.sets}) is the bench's own: {owner.advice(role)}" in message


def test_the_advice_names_the_setting_to_use() -> None:
    with pytest.raises(ServerArgsError, match=r"-c \(the window\) is the bench's own: set ctx \(--ctx, CTX=\)"):
        check_owned_flags(["-c", "8192"], "flint")
    with pytest.raises(ServerArgsError, match="set jeff_ctx"):
        check_owned_flags(["--ctx-size", "512"], "jeff")
    with pytest.raises(ServerArgsError, match="set flint_model .* or flint_hf"):
        check_owned_flags(["-hf", "o/r:Q4"], "flint")
    with pytest.raises(ServerArgsError, match=r"^jeff_server_args: -t \(the CPU threads\) is the bench's own: set"):
        check_owned_flags(["-t", "4"], "jeff", "jeff_server_args")


def test_flags_of_ones_own_pass_and_a_flag_equals_value_is_refused_with_its_rewrite(tmp_path: Path) -> None:
    own = "-fa on -ctk q8_0 -ctv q8_0 --cache-reuse 256 --swa-full --n-cpu-moe 4 -lv 4 --rope-freq-base -1"
    config = load_config(None, {"flint_server_args": own, "jeff_server_args": "--reasoning-budget 0 --jinja"})
    assert config.flint_server_args == shlex.split(own)
    assert config.jeff_server_args == ["--reasoning-budget", "0", "--jinja"]  # Flint's serving flags are Jeff's to set
    assert BenchConfig(flint_server_args=["-ctxcp", 8]).flint_server_args == ["-ctxcp", "8"]  # YAML numbers: text
    with pytest.raises(
        ConfigError, match="--cache-reuse=256: llama-server takes no --flag=value .*: write --cache-reuse 256"
    ):
        load_config(None, {"flint_server_args": ["--cache-reuse=256"]})
    path = tmp_path / "bench.yaml"
    path.write_text("jeff_server_args: [-rea, 'on']\n")
    with pytest.raises(ConfigError, match=r"^.*bench.yaml: jeff_server_args = \['-rea', 'on'\] is not allowed: -rea"):
        load_config(path, {})


def test_the_environment_gives_them_where_the_command_line_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLINT_SERVER_ARGS", "--cache-reuse 64")  # what `make bench FLINT_SERVER_ARGS=...` sets
    assert load_config(None, {}).flint_server_args == ["--cache-reuse", "64"]
    assert load_config(None, {"flint_server_args": "--swa-full"}).flint_server_args == ["--swa-full"]
    monkeypatch.setenv("JEFF_SERVER_ARGS", "--port 9")
    with pytest.raises(ConfigError, match="--port .* each server gets a free port"):
        load_config(None, {})


def test_a_long_flag_reads_as_llama_server_reads_it() -> None:
    assert flag_name("--ctx_size") == "--ctx-size" and flag_name("--cache-reuse=8") == "--cache-reuse"
    assert flag_name("-ctk") == "-ctk"


# What the bench itself passes, in every place that starts a server: each of these flags must be owned.
def bench_flags(args: list[str]) -> set[str]:
    return {arg for arg in args if arg.startswith("-") and not arg[1:2].isdigit()}


@pytest.mark.parametrize("gpu", [False, True])
def test_every_flag_of_a_host_server_is_owned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gpu: bool) -> None:
    monkeypatch.setattr(process, "find_llama_server", lambda: Path("/opt/llama-server"))
    serving = ServingFiles(tmp_path, tmp_path / "t.jinja", tmp_path / "g.gbnf").llama_args()
    flint = LlamaProcess(Path("m.gguf"), 4096, tmp_path / "f.log", extra_args=serving, threads=2, gpu=gpu).command()
    jeff = LlamaProcess(Path("m.gguf"), 4096, tmp_path / "j.log", extra_args=JEFF_FLAGS, threads=2, gpu=gpu).command()
    assert bench_flags(flint[1:]) <= owned_flags("flint"), bench_flags(flint[1:]) - owned_flags("flint")
    assert bench_flags(jeff[1:]) <= owned_flags("jeff"), bench_flags(jeff[1:]) - owned_flags("jeff")
    hub = LlamaProcess(HubRef("o/r", "Q4"), 4096, tmp_path / "h.log").command()
    assert "-hf" in hub and bench_flags(hub[1:]) <= owned_flags("flint")


def compose_commands() -> dict[str, list[str]]:
    """Each llama service's command as Compose hands it to the server: defaults in, split as a shell would."""
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    fill = re.compile(r"\$\{\w+:-([^}]*)\}")
    return {name: shlex.split(fill.sub(r"\1", s["command"])) for name, s in services.items() if "gate" not in name}


def test_every_flag_of_a_compose_server_is_owned_and_the_users_own_come_last() -> None:
    commands = compose_commands()
    assert sorted(commands) == ["flint", "flint-cpu", "jeff", "jeff-cpu"]
    for name, args in commands.items():
        role = name.split("-")[0]
        assert bench_flags(args) <= owned_flags(role), (name, bench_flags(args) - owned_flags(role))
    text = (ROOT / "compose.yaml").read_text()
    for name in commands:
        variable = "${FLINT_SERVER_ARGS:-}" if name.startswith("flint") else "${JEFF_SERVER_ARGS:-}"
        assert yaml.safe_load(text)["services"][name]["command"].endswith(variable), name


def test_every_flag_of_a_kubernetes_sidecar_is_owned_and_the_users_own_come_last() -> None:
    settings = BenchConfig(ctx=[4096], flint_server_args=["-fa", "on"], jeff_server_args=["--cache-reuse", "8"])
    flint, jeff = server(settings, "flint", FLINT_PORT)["args"], server(settings, "jeff", JEFF_PORT)["args"]
    assert flint[-2:] == ["-fa", "on"] and jeff[-2:] == ["--cache-reuse", "8"]
    assert bench_flags(flint[:-2]) <= owned_flags("flint") and bench_flags(jeff[:-2]) <= owned_flags("jeff")


@pytest.mark.llama
def test_the_owned_list_has_every_spelling_the_pinned_server_lists(tmp_path: Path) -> None:
    """From the real `llama-server --help`: each owned flag exists, and every other spelling of its option is owned
    too (short and long, and the negations listed beside it)."""
    import subprocess

    from bench.llama.binaries import find_llama_server, llama_env

    server_path = find_llama_server()
    done = subprocess.run([str(server_path), "--help"], env=llama_env(server_path), capture_output=True, text=True)
    options = [
        [spelling.strip() for spelling in match[1].split(",")]
        for line in done.stdout.splitlines()
        if (match := re.match(r"((?:-[\w.-]+,\s+)*-[\w.-]+)", line))
    ]
    listed = {spelling for option in options for spelling in option}
    for role in ROLES:
        owned = owned_flags(role)
        assert owned <= listed, owned - listed  # no typo, no flag of another build
        for option in options:
            if owned & set(option):
                assert set(option) <= owned, (role, option)
