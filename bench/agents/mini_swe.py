"""mini-swe-agent (PyPI `mini-swe-agent`, pinned): the small agent loop many benchmarks use, as the kind
`mini-swe-agent`.

Headless: `mini -t TASK -y --exit-immediately` with its default configuration (mini.yaml: one `bash` tool), a step
limit from the run, no cost limit (the model is local), the model's sampling and answer length from the run, and
the model as an OpenAI-compatible server at the recording proxy (litellm's `openai/` provider). litellm's model cost
map is read from the package (offline), and mini's first-run questions are skipped.

Done is mini's own: the model submitted (`echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`), which the wrapper below
turns into exit status 0; any other end (the step limit, repeated format errors) is 1.
"""

from __future__ import annotations

import json

from bench.agents.base import AgentKind, AgentSettings, Install, Launch, Place, answer_limit

VERSION = "2.4.6"
PACKAGE = f"mini-swe-agent=={VERSION}"

# Runs mini, then reads its trajectory's exit status: mini exits 0 however the agent ended.
WRAPPER = r"""
import json, pathlib, subprocess, sys
mini, task_file, trajectory, *config = sys.argv[1:]
task = pathlib.Path(task_file).read_text()
code = subprocess.call([mini, "-t", task, "-y", "--exit-immediately", "-o", trajectory, *config])
try:
    info = json.loads(pathlib.Path(trajectory).read_text()).get("info", {})
except (OSError, ValueError):
    sys.exit(code or 1)
print("mini-swe-agent exit status:", info.get("exit_status"))
sys.exit(0 if info.get("exit_status") == "Submitted" else 1)
"""


def launch(place: Place, settings: AgentSettings) -> Launch:
    model_kwargs = {**json.loads(settings.sampling), "max_tokens": answer_limit(settings.ctx)}
    model_kwargs |= {"api_base": f"{place.flint_url}/v1", "api_key": "none"}
    config = ["-c", "mini.yaml", "-c", f"agent.step_limit={settings.max_steps}", "-c", "agent.cost_limit=0"]
    config += ["-c", "model.cost_tracking=ignore_errors", "-c", f"environment.cwd={json.dumps(place.repo)}"]
    config += ["-c", f"model.model_kwargs={json.dumps(model_kwargs)}", "-m", "openai/flint"]
    mini = f"{place.installed}/bin/mini"
    argv = [place.python, "-c", WRAPPER, mini, place.task_file, f"{place.out_dir}/trajectory.json", *config]
    env = {
        "MSWEA_CONFIGURED": "true",  # no first-run questions
        "MSWEA_SILENT_STARTUP": "1",
        "MSWEA_GLOBAL_CONFIG_DIR": f"{place.out_dir}/mini-config",
        "MSWEA_COST_TRACKING": "ignore_errors",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # litellm's cost map from the package, not fetched
    }
    return Launch(argv, env)


MINI_SWE = AgentKind(
    name="mini-swe-agent",
    dialect="chat-completions",
    done="the model submitted (mini's exit status Submitted)",
    install=Install(pip=(PACKAGE,)),
    version=lambda: VERSION,
    launch=launch,
    real_run=(
        "real runs: make test (tests/integration/test_agents_real.py) and make bench CTX=8192 MAX_STEPS=3 "
        "(docs/agents.md, Measured here), context_exhausted at its third request"
    ),
)
