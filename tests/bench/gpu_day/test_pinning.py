"""One card per server pair on every path: gpu_device (index, GPU- or MIG- UUID) becomes the card's UUID for host
servers (CUDA_VISIBLE_DEVICES), compose (GPU_DEVICE -> device_ids) and the sampler, against a fake NVML, and a fake
`llama-server` that prints the environment it was started with."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from bench.llama.gpu_pin import GpuPin, resolve_pin, watched_uuids
from bench.llama.process import LlamaProcess
from bench.servers.kinds import kind
from bench.testing.fake_pynvml import GIB, FakeDevice, FakeNvml, NVMLError_LibraryNotFound, State

CARDS = [FakeDevice(f"GPU-0000000{i}-aaaa-bbbb-cccc-dddddddddddd", [State(used=GIB)]) for i in range(8)]
MIG = "MIG-4b5a1c2d-0000-5f6e-8a9b-0123456789ab"


def test_an_index_becomes_its_cards_uuid_and_a_uuid_stays_as_given() -> None:
    nvml = FakeNvml(CARDS)
    assert resolve_pin("3", nvml) == GpuPin("3", CARDS[3].uuid)
    assert resolve_pin(CARDS[5].uuid, nvml).device == CARDS[5].uuid
    assert resolve_pin(MIG, nvml).is_mig and resolve_pin(MIG, nvml).sampler_uuids() == [MIG]
    assert nvml.shutdowns == nvml.inits == 1  # the lookup started and stopped NVML once; UUIDs need no lookup


def test_without_nvml_an_index_is_passed_on_in_nvidia_smis_order() -> None:
    pin = resolve_pin("2", FakeNvml([], init_error=NVMLError_LibraryNotFound()))
    assert pin.cuda_environment() == {
        "CUDA_VISIBLE_DEVICES": "2",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "LLAMA_ARG_LOG_VERBOSITY": "4",
    }
    assert pin.sampler_uuids() is None
    assert resolve_pin("9", FakeNvml(CARDS)) == GpuPin("9", "")  # an index NVML does not list: left to CUDA


def test_the_sampler_watches_the_pinned_card_unless_the_servers_are_external() -> None:
    nvml = FakeNvml(CARDS)
    for name in ("embedded", "compose"):
        assert watched_uuids("1", kind(name).pins_a_card, nvml) == [CARDS[1].uuid]
    external = kind("external").pins_a_card
    assert watched_uuids("1", external, nvml) is None
    assert watched_uuids(MIG, external, nvml) == [MIG]


FAKE_SERVER = """#!/bin/sh
# A stand-in llama-server: records the environment it was started with, then serves /health until stopped.
env > "$(dirname "$0")/env-$$.txt"
exec python3 -c "
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{\\"status\\":\\"ok\\"}' if self.path == '/health' else b'{\\"default_generation_settings\\":{\\"n_ctx\\":512},\\"total_slots\\":1,\\"model_path\\":\\"m.gguf\\",\\"build_info\\":\\"b0-unknown\\"}'
        self.send_response(200); self.send_header('Content-Length', str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
port = int(sys.argv[sys.argv.index('--port') + 1])
http.server.HTTPServer(('127.0.0.1', port), H).serve_forever()
" "$@"
"""  # noqa: E501


@pytest.fixture
def fake_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    server = tmp_path / "bin" / "llama-server"
    server.parent.mkdir()
    server.write_text(FAKE_SERVER)
    server.chmod(server.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("LLAMA_SERVER", str(server))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return server


def started_env(server: Path, tmp_path: Path, gpu: bool, pin: GpuPin | None) -> dict[str, str]:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    process = LlamaProcess(model, 512, tmp_path / "log" / "s.log", gpu=gpu, pin=pin)
    process.start(30)
    try:
        (recorded,) = server.parent.glob("env-*.txt")
        return dict(line.split("=", 1) for line in recorded.read_text().splitlines() if "=" in line)
    finally:
        process.stop()


@pytest.mark.usefixtures("child_processes")
def test_a_host_gpu_server_sees_only_its_card_and_a_cpu_one_is_left_alone(fake_server: Path, tmp_path: Path) -> None:
    pin = resolve_pin("6", FakeNvml(CARDS))
    env = started_env(fake_server, tmp_path, gpu=True, pin=pin)
    assert env["CUDA_VISIBLE_DEVICES"] == CARDS[6].uuid and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    for stale in fake_server.parent.glob("env-*.txt"):
        stale.unlink()
    cpu_env = started_env(fake_server, tmp_path, gpu=False, pin=pin)
    assert cpu_env.get("CUDA_VISIBLE_DEVICES") == os.environ.get("CUDA_VISIBLE_DEVICES")


@pytest.mark.usefixtures("child_processes")
def test_a_host_server_starts_offline_with_a_local_model_and_an_empty_config_home(
    fake_server: Path, tmp_path: Path
) -> None:
    env = started_env(fake_server, tmp_path, gpu=False, pin=None)
    assert env["LLAMA_ARG_OFFLINE"] == "1"
    home = Path(env["XDG_CONFIG_HOME"])
    assert home.is_dir() and not any(home.rglob("*")) and str(tmp_path / "cache") in str(home)
