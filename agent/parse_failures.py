"""How llama-server says that it could not parse the model's answer: an HTTP 500 that counts as a cut answer.

The server generates the answer, then parses it into content and tool calls with llama.cpp's chat parser; when the
final parse fails, the exception's text becomes a 500 `server_error` (measured on the pinned build). An answer cut in
the middle of a tool call is the usual cause. Each wording below is a throw site of that final parse in some build
of llama.cpp, read in its sources. The article treated every 500 that says "Failed to parse" as a cut answer, so
any other 500 message containing "Failed to parse" (e.g. "Failed to parse tool call") is one too, unless it names
a part of the request (REQUEST_PARTS). Any other 500 stays a transport error (retried). Matching is
case-sensitive, so client-side errors that look alike stay apart.

The request's parts, on purpose not cut answers in part3+, strict and late (sending the same request again fails the
same way, and the agent never sends them malformed): "Failed to parse tool call arguments as JSON" (an assistant
message in the history, common/chat.cpp `func_args_not_string`), "Failed to parse messages", "Failed to parse
tools", "Failed to parse due to missing parser definition." and "Unsupported format" (server set-up). part2,
clearing and part3 keep the article's rule whole (`article=True`): every 500 that says "Failed to parse" is a cut
answer, these too. This is the one place where the two rules differ.
"""

from __future__ import annotations

from typing import NamedTuple


class Wording(NamedTuple):
    text: str  # a part of the message that does not vary
    source: str  # where llama.cpp throws it, and in which builds


PARSE_FAILURES: tuple[Wording, ...] = (
    Wording(
        "The model produced output that does not match the expected",  # "... expected peg-native format"
        "common/chat.cpp common_chat_peg_parse, final parse; about b10405 (Aug 2026) on, incl. b11434 (~L1504)",
    ),
    Wording(
        "Failed to parse input at pos",  # "... pos N" and later "... pos N: <unparsed tail>"
        "common/chat-parser.cpp, then common/chat.cpp common_chat_peg_parse; the PEG parsers, Dec 2025 to ~b9652",
    ),
    Wording(
        "Unexpected content at end of input",
        "common/chat-parser.cpp common_chat_msg_parser::finish(); the per-model parsers of 2025 (Hermes, Llama 3.x…)",
    ),
    Wording(
        "Content path must be a string",
        "common/chat-parser.cpp try_consume_json_with_dumped_args; the generic JSON format of 2025",
    ),
    Wording(
        "Failed to parse json tool call arguments",
        "common/chat.cpp parse_json_tool_calls; builds of early 2025, before common/chat-parser.cpp",
    ),
    Wording(
        "Malformed input, missing closing pattern",
        "common/chat.cpp parse_json_tool_calls; builds of early 2025",
    ),
)


FAILED_TO_PARSE = "Failed to parse"
REQUEST_PARTS = (
    "Failed to parse tool call arguments as JSON",
    "Failed to parse messages",
    "Failed to parse tools",
    "Failed to parse due to missing parser definition",
)


def is_parse_failure(status: int, message: str, *, article: bool = False) -> bool:
    """True for a 500 whose message says the model's output could not be parsed (`article`: by the article's rule,
    also one that names a part of the request)."""
    if status != 500:
        return False
    if any(wording.text in message for wording in PARSE_FAILURES):
        return True
    return FAILED_TO_PARSE in message and (article or not any(part in message for part in REQUEST_PARTS))
