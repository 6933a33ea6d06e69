"""llama-server flags of the user's own (bench/server_args.py): split as a shell would, every flag the bench passes
refused in one line naming the setting to use, in every spelling, and nothing the bench passes left out of that list.
"""

from __future__ import annotations

import csv
import re
import shlex
from pathlib import Path

import pytest
import yaml

from bench import ROOT
from bench.analyze.compare import compare
from bench.cli import main
from bench.config import BenchConfig, load_config
from bench.errors import ConfigError
from bench.llama import process
from bench.llama.forced_tools import ServingFiles
from bench.llama.hub import HubRef
from bench.llama.models import JEFF_FLAGS
from bench.llama.process import LlamaProcess
from bench.llama.reuse import from_command
from bench.results.append import append_row
from bench.results.migrate import migrate
from bench.results.read import read_runs
from bench.results.row import ResultRow
from bench.results.schema import COLUMNS
from bench.server_args import (
    OWNED,
    ROLES,
    ServerArgsError,
    check_owned_flags,
    flag_name,
    owned_flags,
    parse_server_args,
    passed_flags,
)
from bench.servers.external import ExternalServers
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
    assert bench_flags(flint[1:]) <= passed_flags("flint"), bench_flags(flint[1:]) - passed_flags("flint")
    assert bench_flags(jeff[1:]) <= passed_flags("jeff"), bench_flags(jeff[1:]) - passed_flags("jeff")
    hub = LlamaProcess(HubRef("o/r", "Q4"), 4096, tmp_path / "h.log").command()
    assert "-hf" in hub and bench_flags(hub[1:]) <= passed_flags("flint")


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
        assert bench_flags(args) <= passed_flags(role), (name, bench_flags(args) - passed_flags(role))
    text = (ROOT / "compose.yaml").read_text()
    for name in commands:
        variable = "${FLINT_SERVER_ARGS:-}" if name.startswith("flint") else "${JEFF_SERVER_ARGS:-}"
        assert yaml.safe_load(text)["services"][name]["command"].endswith(variable), name


def test_every_flag_of_a_kubernetes_sidecar_is_owned_and_the_users_own_come_last() -> None:
    settings = BenchConfig(ctx=[4096], flint_server_args=["-fa", "on"], jeff_server_args=["--cache-reuse", "8"])
    flint, jeff = server(settings, "flint", FLINT_PORT)["args"], server(settings, "jeff", JEFF_PORT)["args"]
    assert flint[-2:] == ["-fa", "on"] and jeff[-2:] == ["--cache-reuse", "8"]
    assert bench_flags(flint[:-2]) <= passed_flags("flint") and bench_flags(jeff[:-2]) <= passed_flags("jeff")


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


def write_runs(path: Path, server_args: str) -> str:
    """Two runs whose Flint was started with the bench's flags and `server_args`, as a bench records them."""
    flags = "-".join(shlex.split(server_args)) or "none"  # run ids stay unique when one file gets two settings
    for rep in (1, 2):
        row = ResultRow(run_id=f"{path.stem}-{flags}-{rep}", fixture="todo_repo", preset="part3", ctx=4096, rep=rep)
        row.flint_model, row.stop_reason, row.wall_s = "flint.gguf", "step_limit", 10.0 + rep
        from_command(["--cache-ram", "0", *shlex.split(server_args)]).fill(row)
        row.flint_server_args = server_args
        append_row(path, row.cells())
    return str(path)


def test_compare_says_runs_of_other_flags_are_another_setup_and_never_pools_them(tmp_path: Path) -> None:
    default = write_runs(tmp_path / "default.csv", "")
    reuse = write_runs(tmp_path / "reuse.csv", "--cache-reuse 256")
    text, _ = compare([default, reuse])
    (heading,) = [line for line in text.splitlines() if line.startswith("## ")]  # one configuration, file to file
    assert "differs: cache_reuse 0 (default.csv) vs cache_reuse 256 (reuse.csv)" in heading
    assert "no flint_server_args (default.csv) vs flint_server_args --cache-reuse 256 (reuse.csv)" in heading
    write_runs(tmp_path / "both.csv", "")
    both = write_runs(tmp_path / "both.csv", "-fa on")  # one file, two settings: two configurations
    headings = [line for line in compare([both, both])[0].splitlines() if line.startswith("## ")]
    assert len(headings) == 2 and any("flint_server_args -fa on" in h for h in headings), headings


def test_the_command_line_refuses_an_owned_flag_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--flint-server-args", "--ctx-size 8192 -fa on"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (
        "bench: the command line: flint_server_args = '--ctx-size 8192 -fa on' is not allowed: --ctx-size (the "
        "window) is the bench's own: set ctx (--ctx, CTX=)"
    )


NEW_COLUMNS = [
    "cache_type_k",
    "cache_type_v",
    "flash_attn",
    "kv_settings_source",
    "flint_server_args",
    "jeff_server_args",
]


def test_a_file_from_before_these_columns_reads_as_the_servers_it_had_and_migrates(tmp_path: Path) -> None:
    """Before flint_server_args, the bench passed no flags of the user's, so its servers had the build's defaults:
    such rows read so, group with today's default runs, and `bench migrate` writes the values in."""
    today = write_runs(tmp_path / "today.csv", "")
    with open(today, newline="") as f:
        rows = list(csv.DictReader(f))
    old = tmp_path / "old.csv"
    with old.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[c for c in COLUMNS if c not in NEW_COLUMNS], extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    (first, _) = read_runs(str(old))
    assert (first.flint_server_args, first.jeff_server_args, first.cache_type_k, first.flash_attn) == (
        "",
        "",
        "f16",
        "auto",
    )
    assert first.kv_settings_source == ""  # how they were known: not recorded then
    text, _ = compare([str(old), write_runs(tmp_path / "new.csv", "")])
    assert "differs" not in text  # one configuration, compared as one
    assert "migrated" in migrate(old)
    assert all(name in old.read_text().splitlines()[0].split(",") for name in NEW_COLUMNS)


def test_external_servers_record_the_flags_and_say_they_are_not_passed(caplog: pytest.LogCaptureFixture) -> None:
    settings = BenchConfig(servers="external", flint_url="http://127.0.0.1:9", flint_server_args=["-fa", "on"])
    with caplog.at_level("WARNING"):
        ExternalServers(settings)
    assert "recorded in each row as how they were started, not passed" in caplog.text
