"""How Flint is served, as the `flint_serving` column records it: the model's own template, forced tool calls
(bench/llama/forced_tools.py), the project's fenced template (docker/flint-fenced/flint.jinja: the Qwen2.5-Coder CPU
models' calls read by llama.cpp's own parser), or a template of the user's own (--chat-template-file in
flint_server_args, keyed by its sha256 so that rows of two templates are never pooled).
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Sequence
from pathlib import Path

from bench.config import BenchConfig
from bench.errors import PrerequisiteError
from bench.llama.cpu_models import CPU_MODELS
from bench.llama.forced_tools import GRAMMAR_NAME, TEMPLATE_NAME
from bench.results.serving import FENCED_SERVING, FORCED_SERVING, NATIVE_SERVING, OWN_TEMPLATE_SERVING

NATIVE, FORCED, FENCED = NATIVE_SERVING, FORCED_SERVING, FENCED_SERVING
# The fenced template and an empty grammar, in the layout compose's cpu profile mounts (as docker/flint-native).
FENCED_DIR = Path("docker/flint-fenced")  # in the checkout
TEMPLATE_FLAG = "--chat-template-file"


def user_template(server_args: Sequence[str]) -> Path | None:
    """The chat template file a user gives in flint_server_args, or None."""
    if TEMPLATE_FLAG not in server_args:
        return None
    at = list(server_args).index(TEMPLATE_FLAG)
    if at + 1 == len(server_args):
        raise PrerequisiteError(f"flint_server_args: {TEMPLATE_FLAG} needs a file after it")
    return Path(server_args[at + 1]).expanduser()


def without_template(server_args: Sequence[str]) -> list[str]:
    """flint_server_args less the user's --chat-template-file and its file (compose mounts the file instead)."""
    args = list(server_args)
    if TEMPLATE_FLAG in args:
        at = args.index(TEMPLATE_FLAG)
        del args[at : at + 2]
    return args


def resolve(config: BenchConfig, small_model: bool) -> str:
    """flint_serving for these settings; `small_model`: the bench starts Flint itself on the CPU with cpu_model.
    PrerequisiteError for forced or fenced where they cannot apply, or beside a template of the user's own."""
    template = user_template(config.flint_server_args)
    if template is not None:
        if config.flint_tools in ("forced", "fenced"):
            raise PrerequisiteError(
                f"flint_server_args: {TEMPLATE_FLAG} is a template of your own, and flint_tools: {config.flint_tools} "
                "brings the bench's: set flint_tools native (or auto), or drop the flag"
            )
        if not template.is_file():
            raise PrerequisiteError(f"flint_server_args: {TEMPLATE_FLAG} {template}: no such file")
        return own_template_serving(template)
    setting: str = config.flint_tools
    if setting == "auto":
        if not small_model:
            return NATIVE
        setting = CPU_MODELS[config.cpu_model].serving  # forced for SmolLM2, fenced for the Qwen models
    if setting == "forced" and not small_model:
        raise PrerequisiteError(
            "flint_tools: forced serves the small model on CPU only (embedded servers, or compose without a GPU): "
            "use flint_tools: auto or native with these servers"
        )
    return {"native": NATIVE, "forced": FORCED, "fenced": FENCED}[setting]


def jeff_serving(config: BenchConfig, small_model: bool) -> str:
    """How Jeff is served: a Qwen model on the CPU (jeff_cpu_model) with the fenced template, so that his tool calls in
    jeff-first and jeff-gate are parsed by llama.cpp as Flint's are; every other Jeff with his model's own."""
    return FENCED if small_model and CPU_MODELS[config.jeff_cpu_model].serving == "fenced" else NATIVE


def external_serving(config: BenchConfig) -> str:
    """flint_serving for someone else's Flint, as the settings say it was started: fenced means with
    docker/flint-fenced's template, and a template of the user's own is keyed by its sha256 where this machine has
    the file. Forced tool calls need a grammar written for each window, which only servers the bench starts get."""
    template = user_template(config.flint_server_args)
    if template is not None and template.is_file():
        return own_template_serving(template)
    return FENCED if config.flint_tools == "fenced" else NATIVE


def own_template_serving(template: Path) -> str:
    """`native-template:` and the first 12 hex digits of the template's sha256."""
    return f"{OWN_TEMPLATE_SERVING}{hashlib.sha256(template.read_bytes()).hexdigest()[:12]}"


def template_args(serving: str, fenced_dir: Path) -> list[str]:
    """llama-server's flags for the fenced template (`fenced_dir`: where FENCED_DIR is seen by the server: the
    checkout's, or a mount), or --jinja for a template of the user's own (whose --chat-template-file stays in
    flint_server_args); none otherwise."""
    if serving == FENCED:
        return ["--jinja", TEMPLATE_FLAG, str(fenced_dir / TEMPLATE_NAME)]
    if serving.startswith(OWN_TEMPLATE_SERVING):
        return ["--jinja"]
    return []


def own_template_folder(template: Path, folder: Path) -> Path:
    """A folder in compose's serving layout holding the user's template and an empty grammar."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, folder / TEMPLATE_NAME)
    (folder / GRAMMAR_NAME).write_text("")
    return folder
