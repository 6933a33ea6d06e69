"""A first start's download, read from llama-server's own bar in its log; the health wait that follows it."""

from __future__ import annotations

import io
import time
from pathlib import Path

from bench.llama.api import wait_healthy
from bench.llama.download import DownloadWatch, download_progress, either
from bench.llama.process import LlamaProcess

DATA = Path(__file__).parent / "data"
# A real log of this build fetching a file through -hf, its stdout a pseudo-terminal (the middle of the bar cut out).
REAL_LOG = (DATA / "download-cpu-b11434.log").read_text(errors="replace")
NOBODY = "http://127.0.0.1:9"  # the discard port: nothing answers /health there


def test_the_bar_in_a_real_log_gives_the_file_and_its_latest_percent() -> None:
    assert download_progress(REAL_LOG) == {"gpt-oss-20b-mxfp4.gguf": 100}
    half = REAL_LOG[: REAL_LOG.index("Downloading") + 600]
    assert download_progress(half) == {"gpt-oss-20b-mxfp4.gguf": 0}
    assert download_progress("0.00.01 I srv  load_model: loading model 'x.gguf'\n") == {}


def test_the_log_tail_keeps_the_latest_state_of_a_redrawn_bar(tmp_path: Path) -> None:
    log = tmp_path / "flint.log"
    log.write_text(REAL_LOG)
    tail = LlamaProcess(tmp_path / "m.gguf", 512, log).log_tail(7)
    assert "load_model: loading model 'ggml-org/gpt-oss-20b-GGUF:mxfp4'" in tail
    assert tail.count("Downloading") <= 1 and len(tail) < 2000


def test_the_watch_prints_every_few_percent_and_once_at_the_end() -> None:
    logs = iter(
        ["Downloading a.gguf  1%", "\rDownloading a.gguf  3%", "\rDownloading a.gguf  7%", "Downloading a.gguf 100%"]
    )
    out = io.StringIO()
    watch = DownloadWatch("flint", lambda: next(logs), out)
    states = [watch() for _ in range(4)]
    assert states == ["a.gguf:1", "a.gguf:3", "a.gguf:7", "a.gguf:100"]
    assert out.getvalue().splitlines() == [
        "flint: downloading a.gguf   1%",
        "flint: downloading a.gguf   7%",
        "flint: downloading a.gguf 100%",
    ]


def test_two_servers_downloading_at_once_report_together() -> None:
    progress = either(lambda: "a.gguf:5", lambda: None, lambda: "b.gguf:9")
    assert progress() == "a.gguf:5 b.gguf:9"
    assert either(lambda: None)() is None


def test_without_a_download_the_wait_gives_up_at_the_time_limit() -> None:
    started = time.monotonic()
    assert not wait_healthy([NOBODY], 0.6, progress=lambda: None, progress_every_s=0.1)
    assert time.monotonic() - started < 3


def test_a_download_that_moves_is_waited_for_and_one_that_stalls_is_not() -> None:
    moving = iter(range(1000))
    started = time.monotonic()
    assert not wait_healthy([NOBODY], 0.6, progress=lambda: f"a:{min(next(moving), 12)}", progress_every_s=0.1)
    waited = time.monotonic() - started
    # 12 changes about 0.1-0.2 s apart kept it waiting well past the 0.6 s limit; then the stall ended it
    assert waited > 1.5
