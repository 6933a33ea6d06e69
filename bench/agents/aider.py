"""aider (PyPI `aider-chat`, pinned) as the kind `aider`: the pair programmer, run headless on one task.

Headless: `aider --message-file TASK --yes-always` (one turn: the model's edits, then aider's own reflections on
failing tests, at most three; it has no step limit, so the run's max_steps does not apply), with the repository's
tests as its test command (`--auto-test`), no commits, no analytics, update checks or release notes, no URL or shell
suggestions, its histories in the out folder. The model is `openai/flint` at the recording proxy, described by a
metadata file that gives aider the run's window (`max_input_tokens` = ctx, from which aider sizes its chat history
summaries) and a settings file that sends the run's sampling and an answer limit; the repository map gets ctx/8
tokens (aider's own share, without its 1,024-token floor, which is half of a 2K window). Its home is the out folder,
and any HTTP(S) it tries other than the proxy goes to a closed port: litellm's and aider's fetches of model prices
fail closed (the cost map is read from the package).

Done: the repository's tests pass after aider's turn (the article's done check); aider itself exits 0 however its
turn ended.
"""

from __future__ import annotations

import json

from bench.agents.base import AgentKind, AgentSettings, Install, Launch, Place, answer_limit, only_the_model

VERSION = "0.86.2"
PACKAGE = f"aider-chat=={VERSION}"
MODEL = "openai/flint"

# Writes aider's model files, runs aider, removes the repository map's cache it leaves in the repository (not the
# agent's work: it would be in the diff), then runs the repository's tests: their status is the agent's.
WRAPPER = r"""
import pathlib, shutil, subprocess, sys
aider, python, out, metadata, settings, *args = sys.argv[1:]
pathlib.Path(out, "aider-models.json").write_text(metadata)
pathlib.Path(out, "aider-settings.yml").write_text(settings)
code = subprocess.call([aider, *args])
print("aider exit status:", code, flush=True)
for cache in pathlib.Path(".").glob(".aider.tags.cache.v*"):
    shutil.rmtree(cache, ignore_errors=True)
sys.exit(subprocess.call([python, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"]))
"""


def model_files(settings: AgentSettings) -> tuple[str, str]:
    """The metadata (window, answer limit, no cost) and the settings (sampling, answer limit) aider reads."""
    limit = answer_limit(settings.ctx)
    info: dict[str, object] = {"max_input_tokens": settings.ctx, "max_output_tokens": limit, "max_tokens": limit}
    info |= {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0, "litellm_provider": "openai", "mode": "chat"}
    extra = {**json.loads(settings.sampling), "max_tokens": limit}
    return json.dumps({MODEL: info}), json.dumps([{"name": MODEL, "extra_params": extra}])  # JSON is YAML


def launch(place: Place, settings: AgentSettings) -> Launch:
    out = place.out_dir
    metadata, model_settings = model_files(settings)
    args = ["--model", MODEL, "--openai-api-base", f"{place.flint_url}/v1", "--openai-api-key", "none"]
    args += ["--model-metadata-file", f"{out}/aider-models.json", "--model-settings-file", f"{out}/aider-settings.yml"]
    args += ["--map-tokens", str(settings.ctx // 8), "--timeout", str(settings.request_timeout_s)]
    args += ["--message-file", place.task_file, "--yes-always", "--no-auto-commits", "--no-dirty-commits"]
    args += ["--test-cmd", f"{place.python} -m pytest -q -x -p no:cacheprovider", "--auto-test"]
    args += ["--no-analytics", "--no-check-update", "--no-show-release-notes", "--no-show-model-warnings"]
    args += ["--no-check-model-accepts-settings", "--no-detect-urls", "--no-suggest-shell-commands"]
    args += ["--no-pretty", "--no-fancy-input", "--no-restore-chat-history", "--no-gitignore"]
    args += ["--input-history-file", f"{out}/aider.input.history", "--chat-history-file", f"{out}/aider.chat.md"]
    aider = f"{place.installed}/bin/aider"
    argv = [place.python, "-c", WRAPPER, aider, place.python, out, metadata, model_settings, *args]
    env = {"HOME": f"{out}/aider-home", "LITELLM_LOCAL_MODEL_COST_MAP": "True", **only_the_model(place)}
    return Launch(argv, env)


AIDER = AgentKind(
    name="aider",
    dialect="chat-completions",
    done="the repository's tests pass after aider's one turn (--message-file, --auto-test)",
    install=Install(pip=(PACKAGE,)),
    version=lambda: VERSION,
    launch=launch,
    real_run="real runs: make test (tests/integration/test_aider_real.py)",
)
