"""What the bench measures around a run with the servers' help, once the agent is done: the split of its
reprocessed tokens by cause (Flint's tokenizer on the logged requests), and once per server start the servers'
speeds the floor of each run is computed from."""

from __future__ import annotations

import json
from pathlib import Path

from bench.errors import ResultsError
from bench.llama.speed import measure_speeds
from bench.llama.tokenizer import ServerTokenizer
from bench.measure.reprocessing import Attribution, attribute, unavailable
from bench.measure.request_log import load_request_log
from bench.measure.time_split import ServerSpeeds
from bench.measure.trace import Event
from bench.servers.base import Endpoints

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
    flint = measure_speeds(endpoints.flint_url, endpoints.ctx)
    jeff = measure_speeds(endpoints.jeff_url, jeff_ctx) if endpoints.jeff_url else None
    return ServerSpeeds(flint, jeff)
