"""Each board profile on the simulated board (tools/sim.py --board): it
boots with its codec chips set up on the register models, the reply is
heard and the mic is heard, and standby powers the codecs down. The
default profile (sening) runs through the other sim tests."""
import asyncio
import sys

import pytest

from testkit import ROOT
from testkit.server import server_config

from test_sim_cli import boot_to_opener, voiced


def config(llm_url):
    return server_config(llm_url, apps={"opener_lines": {"zh": ["你好呀！"], "en": ["Hi there!"]},
                                        "max_reinvites": 0})


@pytest.mark.parametrize("board", ["esp32-s3-box-3", "bread-compact"])
async def test_board_profile_boots_plays_a_reply_and_hears_the_mic(board, fake_llm, start_server, run_sim,
                                                                  tmp_path):
    fake_llm.reply("🙂 I am Xiaozhi.")
    server = await start_server(config(fake_llm.base_url))
    sim = await run_sim(tmp_path / "state", "--board", board, "--server", server.ws.url)
    opener, reply = await boot_to_opener(sim)
    up = [line for line in sim.log.lines if "codec: %s front end up" % board in line]
    assert up, "the firmware set up the board's front end"
    assert not [line for line in sim.log.lines if "silent:" in line]
    seconds, speech = voiced(reply["wav"])
    assert seconds > 0.5 and speech > 0.3
    mark = len(sim.events)
    await sim.send("say What is your name?")
    heard = await sim.wait_event("subtitle", role="user", since=mark, timeout=40)
    assert "name" in heard["text"].lower()
    await sim.wait_event("reply", since=mark, timeout=30)
    await sim.send("quit")
    assert await sim.wait_exit() == 0
    assert sim.bad_lines == []


async def test_unknown_board_is_refused_with_the_list(tmp_path):
    proc = await asyncio.create_subprocess_exec(sys.executable, "tools/sim.py", "--state", str(tmp_path),
                                                "--board", "box-9", cwd=ROOT, stderr=asyncio.subprocess.PIPE)
    _, err = await proc.communicate()
    assert proc.returncode == 2
    assert b"unknown board 'box-9'; known boards: bread-compact, esp32-s3-box-3, sening" in err


@pytest.mark.parametrize("board", ["esp32-s3-box-3", "bread-compact"])
async def test_board_profile_on_the_micropython_port_hears_the_opener(board, start_server, run_sim, tmp_path):
    server = await start_server(config(None))
    sim = await run_sim(tmp_path / "state", "--micropython", "--board", board, "--server", server.ws.url)
    opener, reply = await boot_to_opener(sim)
    assert [line for line in sim.log.lines if "codec: %s front end up" % board in line]
    seconds, speech = voiced(reply["wav"])
    assert seconds > 0.5 and speech > 0.3
    await sim.send("quit")
    assert await sim.wait_exit() == 0
