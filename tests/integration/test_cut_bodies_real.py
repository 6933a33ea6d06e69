"""This llama-server build cuts answers at the end of the window in the shapes the agent's tests play back
(tests/agent/data/cut_bodies.json), and the agent's client reads each fresh one as a cut."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cut_bodies import SHAPES, STORED, capture, shape_of

from agent.server import ChatClient, UnparsedOutput
from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama

pytestmark = pytest.mark.llama


def test_the_real_server_cuts_answers_in_every_shape_the_agent_is_tested_on(tmp_path: Path) -> None:
    bodies = capture(tmp_path)
    assert sorted(bodies) == sorted(SHAPES)
    stored = json.loads(STORED.read_text())
    for shape, body in bodies.items():
        status = 500 if "error" in body else 200
        assert shape_of(status, stored[shape]) == shape  # the stored body is still of the shape it stands for
        with FakeLlama([fl.raw(body, status=status)]) as server:
            client = ChatClient(server.url, timeout=30)
            if status == 500:
                with pytest.raises(UnparsedOutput):
                    client.chat({"messages": []})
            else:
                assert client.chat({"messages": []}).finish_reason == "length"
