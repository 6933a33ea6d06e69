"""What the bench measures around a run with the servers' help, once the agent is done: the split of its
reprocessed tokens by cause (Flint's tokenizer on the logged requests), and once per server start the servers'
speeds the floor of each run is computed from (after the checks and the warm-up of servers on a GPU: the server's own
calibration, and llama-bench's for host servers); and what each run keeps of how Flint was started (its command line,
for `bench replay --against embedded`)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from bench.errors import ResultsError, ServerPlacementError
from bench.llama import server_command
from bench.llama.gpu_cards import card_name
from bench.llama.gpu_pin import resolve_pin
from bench.llama.llama_bench import measure_server
from bench.llama.placement import placement_problem
from bench.llama.speed import measure_speeds
from bench.llama.tokenizer import ServerTokenizer
from bench.llama.warmup import warm_up_servers
from bench.measure.proxy_log import read_exchanges
from bench.measure.proxy_split import attribute_proxy, proxy_bodies
from bench.measure.reprocessing import Attribution, attribute, unavailable
from bench.measure.request_log import load_request_log
from bench.measure.time_split import ServerSpeeds
from bench.measure.trace import Event
from bench.sandbox.record_proxy import PROXY_LOG
from bench.servers.base import Endpoints

log = logging.getLogger(__name__)

SPLIT_FILE = "reprocessed.json"  # per request, the tokens computed anew by cause (the report draws them)


def split_reprocessing(run_dir: Path, events: list[Event], flint_url: str) -> Attribution:
    """The run's split, also written to run_dir/reprocessed.json."""
    tokenizer = ServerTokenizer(flint_url)
    proxy_log = run_dir / PROXY_LOG  # another agent's: the bodies its proxy logged
    try:
        if any(event.get("source") == "proxy" for event in events[:1]) and proxy_log.is_file():
            bodies = proxy_bodies(read_exchanges(proxy_log.read_text(errors="replace")))
            result = attribute_proxy(events, bodies, tokenizer)
        else:
            result = attribute(events, load_request_log(run_dir), tokenizer)
    except ResultsError as e:
        result = unavailable(f"reprocessing not split: {e}")
    finally:
        tokenizer.close()
    (run_dir / SPLIT_FILE).write_text(json.dumps(result.to_json(), indent=1))
    return result


def prepare_servers(servers: Any, endpoints: Endpoints, gpu_device: str, jeff_ctx: int) -> ServerSpeeds:
    """Once per server start, before the first run: servers on a GPU are checked to be on their card (their logs:
    ServerPlacementError when not) and get their warm-up request (first-kernel and JIT costs land there); then the
    speeds of the warmed servers, from which each run's floor_s is computed."""
    if endpoints.on_gpu:
        check_placement(servers, endpoints, gpu_device)
        for line in warm_up_servers([endpoints.flint_url, endpoints.jeff_url]):
            log.info("%s", line)
    return server_speeds(endpoints, jeff_ctx)


def check_placement(servers: Any, endpoints: Endpoints, gpu_device: str) -> None:
    """Each server's log names its buffers on the pinned card (bench.llama.placement)."""
    role_log = getattr(servers, "role_log", None)
    if role_log is None:  # servers the bench does not start (external) are never on_gpu
        return
    name = card_name(resolve_pin(gpu_device).uuid)
    for role in ("flint", "jeff") if endpoints.jeff_url else ("flint",):
        problem = placement_problem(role.capitalize(), role_log(role), name)
        if problem:
            raise ServerPlacementError(problem)


def server_speeds(endpoints: Endpoints, jeff_ctx: int) -> ServerSpeeds:
    """Each server's calibration, and llama-bench's speeds for the host servers the bench started."""
    flint = measure_speeds(endpoints.flint_url, endpoints.ctx)
    jeff = measure_speeds(endpoints.jeff_url, jeff_ctx) if endpoints.jeff_url else None
    flint_bench = measure_server(endpoints.server_pids.get("flint"), endpoints.flint_model_path, endpoints.ctx, flint)
    log.info("floor for Flint: %s", flint_bench.note)
    jeff_bench = None
    if endpoints.jeff_url:
        jeff_bench = measure_server(endpoints.server_pids.get("jeff"), endpoints.jeff_model_path, jeff_ctx, jeff)
        log.info("floor for Jeff: %s", jeff_bench.note)
    return ServerSpeeds(flint, jeff, flint_bench.speeds, jeff_bench.speeds if jeff_bench else None)


def flint_server(endpoints: Endpoints, run_dir: Path) -> dict[str, Any]:
    """run.json's record of how Flint was started, for host servers (bench/llama/server_command.py); {} otherwise."""
    return server_command.record(endpoints.server_pids.get("flint"), run_dir)
