"""Flint's KV cache types and flash attention (bench/llama/reuse.py): from its flags and environment, with the
pinned build's defaults, unless its log reports them (at -lv 4), and into the row with where they came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.llama.reuse import ReuseSettings, from_command, reported
from bench.results.row import ResultRow

# Lines as the pinned build (b11434) logs them at -lv 4, from a CPU run of the small model.
FLASH_ON = "0.00.356.783 I llama_context: flash_attn            = enabled"
FLASH_AUTO = "0.00.675.443 I llama_context: flash_attn            = auto"
AUTO_CHOSE = "0.00.689.968 I resolve_fused_ops: Flash Attention enabled"
KV_LINE = (
    "0.00.367.195 I llama_kv_cache: size =   17.23 MiB (  1024 cells,  30 layers,  1/1 seqs), K (q8_0):    5.98 MiB, "
    "V (f16):   11.25 MiB"
)


def test_the_flags_give_the_types_and_attention_and_unset_ones_are_the_builds_defaults() -> None:
    default = from_command([])
    assert (default.cache_type_k, default.cache_type_v, default.flash_attn, default.source) == (
        "f16",
        "f16",
        "auto",
        "args",
    )
    args = ["-m", "x.gguf", "-ctk", "Q8_0", "--cache_type_v", "q4_0", "--flash-attn", "enabled"]
    given = from_command(args, {"LLAMA_ARG_FLASH_ATTN": "off", "LLAMA_ARG_CACHE_TYPE_K": "f32"})
    assert (given.cache_type_k, given.cache_type_v, given.flash_attn) == ("q8_0", "q4_0", "on")  # flags win
    assert from_command([], {"LLAMA_ARG_FLASH_ATTN": "0"}).flash_attn == "off"
    assert from_command(["--cache-reuse", "256"]).cache_reuse == 256


@pytest.mark.parametrize(
    ("log", "said"),
    [
        ("\n".join([FLASH_ON, KV_LINE]), {"flash_attn": "on", "cache_type_k": "q8_0", "cache_type_v": "f16"}),
        (
            "\n".join([FLASH_AUTO, KV_LINE, AUTO_CHOSE]),
            {"flash_attn": "on", "cache_type_k": "q8_0", "cache_type_v": "f16"},
        ),
        (FLASH_AUTO, {"flash_attn": "auto"}),  # asked for auto, and no word of what it chose
        (
            "sched_reserve: Flash Attention was auto, set to disabled\n" + FLASH_AUTO,
            {"flash_attn": "off"},
        ),  # earlier builds
        ("0.00.005.225 I srv  llama_server: initializing ...", {}),  # the default verbosity says nothing
    ],
)
def test_the_log_reports_what_the_server_made(log: str, said: dict[str, str]) -> None:
    assert reported(log) == said


def test_a_full_report_wins_over_the_flags_and_says_so_in_the_row() -> None:
    flags = from_command(["-fa", "auto"])
    assert flags.as_reported({"flash_attn": "off"}) == flags  # a partial report changes nothing
    settings = flags.as_reported(reported("\n".join([FLASH_AUTO, KV_LINE, AUTO_CHOSE])))
    row = ResultRow()
    settings.fill(row)
    assert (row.cache_type_k, row.cache_type_v, row.flash_attn, row.kv_settings_source) == ("q8_0", "f16", "on", "log")
    assert (row.cache_reuse, row.cache_ram_mib) == (0, 8192)


def test_a_row_of_someone_elses_servers_leaves_them_not_known() -> None:
    cells = ResultRow().cells()
    assert (cells["cache_type_k"], cells["flash_attn"], cells["kv_settings_source"], cells["cache_reuse"]) == (
        "",
        "",
        "",
        "",
    )


@pytest.mark.llama
def test_a_real_server_at_lv_4_reports_its_cache_and_attention(tmp_path: Path) -> None:
    from bench.llama.binaries import find_small_model
    from bench.llama.process import LlamaProcess
    from bench.llama.reuse import of_server

    flags = ["-lv", "4", "-fa", "off", "-ctk", "q8_0"]
    with LlamaProcess(find_small_model(), 512, tmp_path / "server.log", extra_args=flags, threads=1) as server:
        said = reported(server.log_text())
        settings = of_server(server.pid, None, said)
    assert said == {"flash_attn": "off", "cache_type_k": "q8_0", "cache_type_v": "f16"}
    assert settings == ReuseSettings(False, 32, 0, 0, "q8_0", "f16", "off", "log")
