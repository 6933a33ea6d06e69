"""Where a replayed request's prompt_n can differ from the recording only through the server's answer before it.

Every body is sent as the run sent it, so after a request the slot holds that prompt and the server's own answer to
it; the next prompt goes on with the answer as the agent sent it back, and the server reuses the longest common
prefix. Where the next prompt keeps the whole previous prompt (no clearing between them), the tokens it reuses past
that prompt are tokens of the server's answer: an answer drawn again (a sampled run: temperature above 0, no seed)
can be the same call in other tokens (SmolLM2 writes `pytest` as one token or as `py` + `test` under a grammar, the
agent's message sent back is tokenized as `pytest`), and the prompt then reuses less of it. Such a request is told
apart from one whose prompt_n differs where no answer reaches: that is the server's own doing.

Everything here is read from the figures the CSV keeps (bench/replay/server_report.py), so a report read back from
its CSV says the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.replay.send import Sent

REFUSED = 400  # a prompt refused before it was processed (too large, a bad request): the slot is as it was


@dataclass(frozen=True)
class AnswerReuse:
    """How many tokens of the answer before it a request's prompt reused, now and in the run."""

    before: Sent  # the request whose answer the slot held
    now: int
    then: int

    def why(self) -> str:
        """Why prompt_n differs, for the report's line."""
        number = self.before.recorded.number
        said = f"its prompt reused {self.now} tokens of the server's answer to request {number}, the run's {self.then}"
        tokens, recorded = self.before.figure("predicted_n"), self.before.recorded.figure("predicted_n")
        if self.before.answered_otherwise:
            return f"{said} (request {number} was answered otherwise)"
        if tokens is not None and recorded is not None and tokens != recorded:
            return (
                f"{said} (request {number} was answered alike in other tokens: {tokens:.0f}, the run's {recorded:.0f})"
            )
        return said


def answer_reuse(sent: list[Sent], index: int) -> AnswerReuse | None:
    """For `sent[index]`: the answer before it that its prompt went on from, now and in the run; None where its prompt
    parted from the previous one before that answer (or the figures do not say), so no answer explains its prompt_n."""
    this = sent[index]
    before = next((s for s in reversed(sent[:index]) if s.run == this.run and s.status != REFUSED), None)
    if before is None or before.status != 200:
        return None
    length = _length(before, recorded=False)
    if length is None or length != _length(before, recorded=True):
        return None
    if _length(this, recorded=False) != _length(this, recorded=True):  # another template or tokenizer
        return None
    now, then = this.figure("cache_n"), this.recorded.figure("cache_n")
    if now is None or then is None or min(now, then) < length:
        return None
    return AnswerReuse(before, int(now - length), int(then - length))


def _length(sent: Sent, recorded: bool) -> float | None:
    """The prompt's length in tokens: what was computed anew and what was cached."""
    figure = sent.recorded.figure if recorded else sent.figure
    computed, cached = figure("prompt_n"), figure("cache_n")
    return None if computed is None or cached is None else computed + cached
