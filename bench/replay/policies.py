"""Clearing policies the replay can apply (bench/replay/walk.py), named on the command line:

    after:H            the article's clearing: after an answer that left the window past H (part3 at H = 0.5)
    before:H           part3+'s: before a request estimated past H, older done-check output cleared too, and only
                       what the placeholder makes smaller (as lowwater and summary)
    lowwater:H:L       before a request estimated past H, clear the oldest material only until it is down to L
    summary:S[:H]      cost only: before a request estimated past H (0.5 unless given), what part3+ would clear is
                       replaced by a block of about S tokens after the task instead (presets summary, summary-jeff,
                       agent/summary.py), and the question that asks Flint for it is counted as a request
    none               never clear (part2)
    run                what the run itself did: its preset, --keep and --clear-at, from its trace

Any of them takes `:keep=K` (the newest K tool results are never cleared; 2 unless given), e.g. `before:0.75:keep=3`.
Clearing is the agent's own (agent/clearing.py: clear_old, and the agent's request-size estimate), so a policy that
wins here can become a preset with the same behaviour.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from bench.agents.article import (
    ARTICLE_CLEARING,
    PRESETS,
    ROOM_ONLY_CLEARING,
    SUMMARY_AT,
    RequestEstimate,
    clear_old,
    prompts,
    propose_replacing,
    with_summary,
)
from bench.errors import ConfigError

Message = dict[str, Any]
DEFAULT_POLICIES = (
    "run",
    "none",
    "after:0.5",
    "before:0.5",
    "before:0.6",
    "before:0.75",
    "before:0.9",
    "lowwater:0.75:0.5",
    "lowwater:0.9:0.5",
    "before:0.5:keep=1",
    "before:0.5:keep=3",
    "after:0.5:keep=1",
    "after:0.5:keep=3",
)


@dataclass(frozen=True)
class Policy:
    name: str
    moment: str  # after | before | none
    clear_at: float = 0.5
    low_water: float | None = None  # before-send only: clear just enough to come down to this share of the window
    keep: int = 2
    summary_tokens: int | None = None  # summary:S: the block that replaces the cleared material, in tokens

    @property
    def clears(self) -> bool:
        return self.moment != "none"

    @property
    def clears_done_outputs(self) -> bool:
        return self.moment == "before"  # part3+ and its kin clear older done-check output too

    @property
    def room_only(self) -> bool:
        return self.moment == "before"  # part3+ and its kin clear only what the placeholder makes smaller

    def clear(self, messages: list[Message], done_outputs: list[int], estimate: RequestEstimate, n_ctx: int) -> int:
        """Clear `messages` in place as this policy does; returns how many messages changed."""
        outputs = done_outputs if self.clears_done_outputs else []
        if self.summary_tokens is not None:
            return summarize(messages, self.keep, self.summary_tokens)
        how = ROOM_ONLY_CLEARING if self.room_only else ARTICLE_CLEARING
        if self.low_water is None:
            return clear_old(messages, self.keep, outputs, how)
        tools = sum(1 for m in messages if m.get("role") == "tool")
        for keep in range(max(tools, self.keep), self.keep - 1, -1):  # the least clearing that gets down to L
            trial = copy.deepcopy(messages)
            changed = clear_old(trial, keep, outputs, how)
            size = estimate.tokens_for(trial)
            if keep == self.keep or (changed and size is not None and size <= self.low_water * n_ctx):
                messages[:] = trial
                return changed
        return 0


def summarize(messages: list[Message], keep: int, tokens: int) -> int:
    """summary:S: what part3+ would clear, replaced as the summary presets replace it, with a block of about S tokens
    for the summary (one short word a token). Older done-check output is left alone: the summary's message moves
    every later message one on, and the run's positions of that output would miss."""
    proposal = propose_replacing(messages, keep, [])
    if proposal is None:
        return 0
    summary_at = SUMMARY_AT if has_summary(messages) else None
    after = with_summary(proposal, summary_at, " ".join(["the"] * tokens))
    changed = sum(1 for old, new in zip(messages, after, strict=False) if old != new)
    messages[:] = after
    return changed


def has_summary(messages: list[Message]) -> bool:
    head = prompts.summary_message("").strip()
    return len(messages) > SUMMARY_AT and str(messages[SUMMARY_AT].get("content") or "").startswith(head)


def summary_question(keep: int) -> Message:
    """The question that asks Flint for its summary (agent/summary.py FlintWriter), after the conversation."""
    return {"role": "user", "content": prompts.summary_request(prompts.SUMMARY_TOKENS, keep)}


def parse_policy(text: str, run_preset: str | None = None, keep: int = 2, clear_at: float = 0.5) -> Policy:
    """A policy from its name; `run` needs the run's preset, --keep and --clear-at."""
    parts = text.strip().split(":")
    options = [p for p in parts[1:] if p.startswith("keep=")]
    numbers = [p for p in parts[1:] if not p.startswith("keep=")]
    try:
        chosen_keep = int(options[-1].removeprefix("keep=")) if options else None
        values = [float(n) for n in numbers]
    except ValueError:
        raise ConfigError(
            f"policy {text!r}: thresholds and keep must be numbers (see python -m bench replay -h)"
        ) from None
    kind = parts[0]
    if kind == "summary":
        return summary_policy(text, values, 2 if chosen_keep is None else chosen_keep)
    if kind == "run":
        if run_preset not in PRESETS:
            raise ConfigError(f"policy run: the trace names no known preset ({run_preset!r})")
        preset = PRESETS[run_preset]
        moment = "none" if not preset.clears else ("before" if preset.clears_before_send else "after")
        return Policy(f"run ({run_preset})", moment, clear_at, keep=keep if chosen_keep is None else chosen_keep)
    shapes = {"after": 1, "before": 1, "lowwater": 2, "none": 0}
    if kind not in shapes or len(values) != shapes[kind] or any(not 0 < v <= 1 for v in values):
        raise ConfigError(
            f"policy {text!r} is not one of after:H, before:H, lowwater:H:L, summary:S[:H], none or run (H, L "
            "between 0 and 1, S a number of tokens, optionally :keep=K)"
        )
    if kind == "lowwater" and values[1] >= values[0]:
        raise ConfigError(f"policy {text!r}: the low-water mark L must be below the threshold H")
    k = 2 if chosen_keep is None else chosen_keep
    if k < 0:
        raise ConfigError(f"policy {text!r}: keep must be 0 or more")
    if kind == "lowwater":
        return Policy(name=text, moment="before", clear_at=values[0], low_water=values[1], keep=k)
    return Policy(text, kind, values[0] if values else 0.5, keep=k)


def summary_policy(text: str, values: list[float], keep: int) -> Policy:
    """summary:S[:H]: a block of S tokens (a whole number, 1 or more) in place of what before:H would clear."""
    usage = f"policy {text!r}: write summary:S or summary:S:H (S tokens, a whole number from 1; H between 0 and 1)"
    if not 1 <= len(values) <= 2 or values[0] < 1 or values[0] != int(values[0]) or keep < 0:
        raise ConfigError(usage)
    threshold = values[1] if len(values) == 2 else 0.5
    if not 0 < threshold <= 1:
        raise ConfigError(usage)
    return Policy(text, "before", threshold, keep=keep, summary_tokens=int(values[0]))
