"""The replay's speed on a 30-step trace (figure for perf/run.py): a run of the agent against the scripted server
(30 reads of files large enough that part3 clears), replayed under one policy at a time, its prompts counted by a
real llama-server's /apply-template and /tokenize (the small model's; quick mode: the scripted server's)."""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

from agent.cli import main as agent_main
from bench.errors import PrerequisiteError
from bench.llama.binaries import find_small_model
from bench.llama.process import LlamaProcess
from bench.llama.tokenizer import ServerTokenizer
from bench.replay.policies import parse_policy
from bench.replay.walk import RunTimeline, load_timeline, replay
from bench.testing import fake_llama
from perf.figures import Figure, Unavailable, figure, timed

STEPS = 30
POLICIES = ("after:0.5", "before:0.75", "lowwater:0.9:0.5")


def figures(quick: bool) -> list[Figure]:
    repeats = 1 if quick else 5
    with tempfile.TemporaryDirectory(prefix="agentbench-perf-") as tmp:
        run_dir, repo = Path(tmp) / "run", Path(tmp) / "repo"
        run_dir.mkdir()
        repo.mkdir()
        for i in range(3):
            (repo / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n" * 60)
        replies = [fake_llama.tool_call("read_file", {"path": f"m{i % 3}.py"}) for i in range(STEPS)]
        with fake_llama.FakeLlama(replies, n_ctx=8192) as flint:
            argv = [
                "--repo",
                str(repo),
                "--task",
                "read",
                "--flint",
                flint.url,
                "--no-jeff",
                "--approve",
                "no",
                "--max-steps",
                str(STEPS),
                "--preset",
                "part3",
                "--events",
                str(run_dir / "events.jsonl"),
            ]
            with contextlib.redirect_stdout(io.StringIO()):
                agent_main(argv)
            timeline = load_timeline(run_dir)
            if quick:
                samples = replay_times(timeline, flint.url, repeats, POLICIES[:1])
        if not quick:
            try:
                model = find_small_model()
            except PrerequisiteError as e:
                raise Unavailable(str(e)) from e
            with LlamaProcess(model, 8192, Path(tmp) / "tokenizer.log", extra_args=["--no-warmup"], threads=1) as s:
                samples = replay_times(timeline, s.url, repeats)
    return [figure(f"replay of a {STEPS}-step trace, one policy", "s", samples, "<= 3.0", quick)]


def replay_times(timeline: RunTimeline, url: str, repeats: int, policies: tuple[str, ...] = POLICIES) -> list[float]:
    samples = []
    for name in policies:
        policy = parse_policy(name, "part3")
        for _ in range(repeats):
            tokenizer = ServerTokenizer(url)  # a fresh one each time: nothing counted before
            samples += timed(lambda t=tokenizer, p=policy: replay(timeline, p, t), 1)  # type: ignore[misc]
            tokenizer.close()
    return samples
