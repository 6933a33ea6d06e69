"""A synthetic series of nightly results files with known changes, for `bench history` and the pooled gate.

    python experiments/synthetic_nights.py OUT_DIR [--nights 30] [--seed 7]

writes OUT_DIR/nightly-YYYYMMDD-<sha>.csv, one per night from 2026-11-01, each with 3 runs of two configurations
(todo_repo at ctx 4096, presets part2 and part3), through the bench's own row writer. The noise model: wall times
log-normal with a coefficient of variation of 10%, reprocessed tokens 8%, peak GPU memory within a few MiB; each
run completes with a fixed probability. Planted changes, all in part3 (part2 is the control and has none):

- night 12 (2026-11-13): wall_s x1.3, a slowdown;
- night 22 (2026-11-23): prompt_tokens_reprocessed x0.6, an improvement.

Night 7's third part2 run is an infra_error (a server that died): counted apart, never a figure.
"""

from __future__ import annotations

import argparse
import math
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

from bench.results.append import append_row

START = datetime(2026, 11, 1, 2, 17, tzinfo=timezone.utc)
SLOWDOWN_NIGHT, SLOWDOWN = 12, 1.3
TOKENS_NIGHT, TOKENS = 22, 0.6
INFRA_NIGHT = 7
# preset -> median wall_s, median reprocessed tokens, share completed, peak MiB
BASE = {"part2": (180.0, 60_000.0, 0.6, 13_644), "part3": (240.0, 15_000.0, 0.9, 13_652)}


def lognormal(rng: random.Random, median: float, cv: float) -> float:
    return rng.lognormvariate(math.log(median), math.sqrt(math.log(1 + cv**2)))


def run_row(rng: random.Random, night: int, preset: str, rep: int, sha: str) -> dict[str, str]:
    wall, tokens, share, mib = BASE[preset]
    if preset == "part3":
        wall *= SLOWDOWN if night >= SLOWDOWN_NIGHT else 1.0
        tokens *= TOKENS if night >= TOKENS_NIGHT else 1.0
    started = START + timedelta(days=night, minutes=10 * rep + (30 if preset == "part3" else 0))
    row = {
        "run_id": f"{started:%Y%m%dT%H%M%S}-todo_repo-{preset}-4096-r{rep}-{rng.getrandbits(16):04x}",
        "started_at": started.isoformat(timespec="seconds"),
        "git_sha": sha,
        "fixture": "todo_repo",
        "preset": preset,
        "ctx": "4096",
        "rep": str(rep),
        "sandbox": "docker",
        "servers": "compose",
        "flint_model": "Qwen3-14B-Q4_K_M.gguf",
        "jeff_model": "Qwen3-0.6B-Q8_0.gguf",
        "flint_model_sha256": "9e3c" + "0" * 60,
        "jeff_model_sha256": "51ab" + "0" * 60,
        "server_build": "b7786-0a1b2c3",
        "gpu_name": "NVIDIA H200",
        "gpu_mem_method": "nvml_device_v2+process_v3",
        "hidden_total": "6",
    }
    if preset == "part2" and night == INFRA_NIGHT and rep == 3:
        return row | {"stop_reason": "infra_error", "error": "a llama-server died during the run"}
    done = rng.random() < share
    wall_s = lognormal(rng, wall, 0.10)
    return row | {
        "stop_reason": "done" if done else "step_limit",
        "hidden_passed": "6" if done else str(rng.randint(2, 5)),
        "wall_s": f"{wall_s:.2f}",
        "model_s": f"{wall_s * 0.8:.2f}",
        "prompt_tokens_reprocessed": str(round(lognormal(rng, tokens, 0.08))),
        "reprocessed_check": "ok",
        "peak_gpu_mib_flint": str(mib + rng.randint(-4, 4)),
    }


def write_nights(out: Path, nights: int = 30, seed: int = 7) -> list[Path]:
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for night in range(nights):
        sha = f"{rng.getrandbits(160):040x}"
        path = out / f"nightly-{START + timedelta(days=night):%Y%m%d}-{sha[:7]}.csv"
        path.unlink(missing_ok=True)
        for preset in ("part2", "part3"):
            for rep in (1, 2, 3):
                append_row(path, run_row(rng, night, preset, rep, sha))
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--nights", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    paths = write_nights(Path(args.out_dir), args.nights, args.seed)
    print(f"wrote {len(paths)} nightly files to {args.out_dir}")


if __name__ == "__main__":
    main()
