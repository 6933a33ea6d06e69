"""The rehearsal's tiny model (written with llama.cpp's own `gguf` package) is a model the real llama-server of this
build loads and serves; the warm-up request and the request at the window work against it; and the server prints
the memory breakdown the self-check reads when it is stopped. On the CPU here: the GPU side of it is the rehearsal's."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.llama.buffers import breakdown_in_log, buffers_in_log
from bench.llama.process import LlamaProcess
from bench.llama.warmup import warm_up, window_request
from bench.rehearsal.tiny_model import write_tiny_model

pytestmark = pytest.mark.llama


def test_the_tiny_model_is_served_warmed_up_filled_and_accounted_for(tmp_path: Path) -> None:
    model = write_tiny_model(tmp_path / "tiny.gguf")
    assert model.stat().st_size < 1 << 20
    server = LlamaProcess(model, 2048, tmp_path / "server.log", threads=1, extra_args=["-lv", "4"])
    server.start(60)
    try:
        seconds, problem = warm_up(server.url)
        assert problem is None and seconds < 60
        prompt = window_request(server.url, 2048)
        assert 0.6 * 2048 <= prompt <= 2048  # about three quarters of the window, measured by /tokenize
    finally:
        server.stop()
    log = server.log_text()
    kinds = {buffer.kind for buffer in buffers_in_log(log)}
    assert {"model", "KV", "compute"} <= kinds
    (host,) = breakdown_in_log(log)  # the table printed at exit; on the CPU it has the host row alone
    assert host.name == "Host" and host.self_mib == host.model_mib + host.context_mib + host.compute_mib
