"""What the bench measures around a run with the servers' help, once the agent is done: the split of its
reprocessed tokens by cause (Flint's tokenizer on the logged requests), and once per server start the servers'
speeds the floor of each run is computed from (the server's own calibration, and llama-bench's for host servers);
and what each run keeps of how Flint was started (its command line, for `bench replay --against embedded`)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from bench.errors import ResultsError
from bench.llama import server_command
from bench.llama.llama_bench import measure_server
from bench.llama.speed import measure_speeds
from bench.llama.tokenizer import ServerTokenizer
from bench.measure.reprocessing import Attribution, attribute, unavailable
from bench.measure.request_log import load_request_log
from bench.measure.time_split import ServerSpeeds
from bench.measure.trace import Event
from bench.servers.base import Endpoints

log = logging.getLogger(__name__)
SPLIT_FILE = "reprocessed.json"  # per request, the tokens computed anew by cause (the report draws them)


def split_reprocessing(run_dir: Path, events: list[Event], flint_url: str) -> Attribution:
    """The run's split, also written to run_dir/reprocessed.json."""
    tokenizer = ServerTokenizer(flint_url)
    try:
        result = attribute(events, load_request_log(run_dir), tokenizer)
    except ResultsError as e:
        result = unavailable(f"reprocessing not split: {e}")
    finally:
        tokenizer.close()
    (run_dir / SPLIT_FILE).write_text(json.dumps(result.to_json(), indent=1))
    return result


def server_speeds(endpoints: Endpoints, jeff_ctx: int) -> ServerSpeeds:
    """Each server's calibration, and llama-bench's speeds for the host servers the bench started."""
    flint = measure_speeds(endpoints.flint_url, endpoints.ctx)
    jeff = measure_speeds(endpoints.jeff_url, jeff_ctx) if endpoints.jeff_url else None
    flint_bench = measure_server(endpoints.server_pids.get("flint"), endpoints.flint_model_path, endpoints.ctx)
    log.info("floor for Flint: %s", flint_bench.note)
    jeff_bench = None
    if endpoints.jeff_url:
        jeff_bench = measure_server(endpoints.server_pids.get("jeff"), endpoints.jeff_model_path, jeff_ctx)
        log.info("floor for Jeff: %s", jeff_bench.note)
    return ServerSpeeds(flint, jeff, flint_bench.speeds, jeff_bench.speeds if jeff_bench else None)


def flint_server(endpoints: Endpoints, run_dir: Path) -> dict[str, Any]:
    """run.json's record of how Flint was started, for host servers (bench/llama/server_command.py); {} otherwise."""
    return server_command.record(endpoints.server_pids.get("flint"), run_dir)
