"""The row's columns on what an agent's requests were like (bench/measure/request_figures.py) and the two causes of
reprocessing only other agents than the article's have (bench/measure/proxy_split.py): one of the row's column
groups (bench/results/row.py ROW_GROUPS). Files from before them read as not measured."""

from __future__ import annotations

from dataclasses import dataclass

from bench.results.column import col


@dataclass
class AgentRequestColumns:
    """What the agent asked the model and how; None means not measured (an empty cell)."""

    streamed: str = col(
        "yes: every answer the agent asked for came as server-sent events; no: none did; `N of M`: some. Empty for "
        "the article's agent (its own trace does not say; it never streams)",
    )
    first_prompt_tokens: int | None = col(
        "the prompt of the agent's first main-thread request (its system prompt, tools and the task) as the server "
        "counted it; a context 400's own count when it did not fit the window",
        unit="tokens",
    )
    requests_main: int | None = col(
        "model requests of the agent's main conversation (the tools or system prompt most of its requests share); "
        "empty for the article's agent (all its requests are its own: steps)",
        unit="requests",
    )
    requests_side: int | None = col(
        "model requests outside the main conversation without tools: titles, summaries, commit messages",
        unit="requests",
    )
    requests_subagent: int | None = col(
        "model requests outside the main conversation that offer tools of their own: sub-agents",
        unit="requests",
    )
    reprocessed_by_truncation: int | None = col(
        "material sent before, computed again because the agent dropped earlier messages from its history (a history "
        "window); 0 for the article's agent, which never drops one",
        unit="tokens",
        better="lower",
    )
    reprocessed_by_side: int | None = col(
        "the agent's side requests and sub-agents' first prompts, and its main thread's material computed again after "
        "one of them took the server's slot; 0 for the article's agent",
        unit="tokens",
        better="lower",
    )
