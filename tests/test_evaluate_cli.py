"""``agentnb eval FILE`` on the command line and ``%agent_eval`` in IPython."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.testing import globalipapp

from agentnb import Agent
from agentnb.evaluation import Evaluation
from agentnb.testing import FunctionProvider, ScriptedServer


@pytest.fixture
def ip() -> Iterator[Any]:
    globalipapp.start_ipython()
    shell = globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "agentnb")
    saved = dict(shell.user_ns)
    yield shell
    shell.user_ns.clear()
    shell.user_ns.update(saved)


def echo_upper(messages: Any, tools: Any) -> str:
    return messages[-1].content.upper()


def test_agent_eval_magic_takes_dataset_agents_and_scorers_from_the_namespace(ip: Any, tmp_path: Path) -> None:
    def shouts(case: Any, result: Any) -> bool:
        return result.output.isupper()

    ip.user_ns.update(
        {
            "questions": [{"input": "hi", "expected": "HI"}, {"input": "yo", "expected": "no"}],
            "loud": Agent(FunctionProvider(echo_upper)),
            "quiet": Agent(FunctionProvider(lambda m, t: m[-1].content)),
            "shouts": shouts,
            "exact": __import__("agentnb.evaluation", fromlist=["exact"]).exact,  # the factory, imported
        }
    )
    log = tmp_path / "m.jsonl"
    ev = ip.run_line_magic("agent_eval", f"questions loud quiet --scorers exact,shouts --concurrency 2 --log {log}")
    assert isinstance(ev, Evaluation) and ev.agents == ["loud", "quiet"]
    assert ev.table[["agent", "exact", "shouts"]].values.tolist() == [
        ["loud", True, True],
        ["quiet", False, False],
        ["loud", False, True],
        ["quiet", False, False],
    ]
    assert len(log.read_text().splitlines()) == 4


def test_agent_eval_magic_says_what_is_wrong(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert ip.run_line_magic("agent_eval", "[] nobody") is None
    assert "no variable 'nobody'" in capsys.readouterr().out
    ip.user_ns["a"] = Agent(FunctionProvider(echo_upper))
    assert ip.run_line_magic("agent_eval", "missing.jsonl a") is None
    assert "does not exist" in capsys.readouterr().out


@pytest.mark.slow
def test_agentnb_eval_command_writes_the_log_and_prints_the_summary(tmp_path: Path) -> None:
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps({"input": f"q{i}", "expected": "yes"}) + "\n" for i in range(5)))
    log = tmp_path / "runs.jsonl"
    with ScriptedServer(default_text="yes indeed") as server:
        cmd = [sys.executable, "-m", "agentnb", "eval", str(data), "--provider", "openai:m", "--base-url", server.url]
        out = subprocess.run([*cmd, "--log", str(log)], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "agent: 5/5 passed 100%" in out.stdout and "5/5" in out.stderr
        assert len(log.read_text().splitlines()) == 5
        again = subprocess.run([*cmd, "--log", str(log)], capture_output=True, text=True, timeout=120)
        assert again.returncode == 0 and len(server.requests) == 5  # resumed: nothing asked twice
