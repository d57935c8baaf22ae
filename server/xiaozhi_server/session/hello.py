"""The hello: the first exchange of a device connection, and what starts
with it (the listener, the device's own tools, the App Runtime).

A device sends `hello` first; anything before it is ignored (a message
with an id is answered: refusal.py), and without one in `hello_timeout_s`
the channel closes. Whatever the hello leaves out takes the documented
defaults (stock servers accept a bare hello; the browser test page sends
one).
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, cast

from .. import protocol as proto
from ..runtime.runtime import AppRuntime
from ..runtime.tools import runtime_tools
from . import refusal
from .hearing import Hearing

log = logging.getLogger(__name__)


async def receive(session: Any) -> dict | None:
    """The device's hello, read before anything else (None: none came in
    time, and the channel is closed)."""
    deadline = time.monotonic() + session.cfg.hello_timeout_s
    while True:
        left = deadline - time.monotonic()
        try:
            message = await asyncio.wait_for(session.ws.recv(), max(left, 0.001))
        except asyncio.TimeoutError:
            log.info("[%s] no hello within %s s: closing", session.device_id, session.cfg.hello_timeout_s)
            await session.ws.close(4000, "no hello")
            return None
        if not isinstance(message, str):
            log.info("[%s] binary frame before hello ignored", session.device_id)
            continue
        try:
            msg = proto.decode_ws(message, proto.UP)
        except proto.ProtoError as e:
            log.info("[%s] before hello, ignored: %s", session.device_id, e)
            await refusal.refuse(session, message, str(e))
            continue
        if msg["type"] != "hello":
            log.info("[%s] %s before hello ignored", session.device_id, msg["type"])
            await refusal.refuse(session, message, "%s before hello: send hello first" % msg["type"])
            continue
        return msg


async def accept(session: Any, msg: dict) -> None:
    """Answer the hello, and start what lives from it on: the listener, the
    device's tools, the App Runtime."""
    session.hello = msg
    if session.on_hello is not None:
        # Before any await: two connections of one device are ordered by
        # their hellos, so the older session is the one replaced.
        session.on_hello()
    # Opus of any rate, channel count or frame length decodes into the
    # listener's 16 kHz; what we send down is announced as it really is.
    session.upstream = dict(cast(dict, proto.HELLO_DEFAULTS["audio_params"]), **(msg.get("audio_params") or {}))
    session.hearing = Hearing(session)
    # The recogniser tuned to this child (their language, their name): read from the store meanwhile.
    session.spawn(session.chain.hear_child(session.hearing.listener, session.device_id, session.care, session.family))
    ap = {"format": "opus", "sample_rate": session.speaker.rate, "channels": 1,
          "frame_duration": proto.FRAME_DURATION_MS}
    await session.send_json(proto.hello_server(session.id, ap, version=session.version))
    if session.upstream["format"] != "opus":
        log.warning("[%s] upstream audio %r is not Opus: not decoded", session.device_id, session.upstream["format"])
        await session.send_json(proto.alert("warning", session.lines.get("unheard_audio", session.language)
                                            % session.upstream["format"], "confused", session_id=session.id))
    if (msg.get("features") or {}).get("mcp"):
        session.spawn(_start_device_mcp(session))
    _start_runtime(session)
    # Before the device's first words are read: they may follow on from
    # what it said on another node (runtime/conversation.py).
    await session.runtime.carry.restore()
    await session.services.on_session_ready(session)


def _start_runtime(session):
    """The session's App Runtime: the default app at once, its own tools,
    the device's app/start_task, and the opener once the device is ready."""
    services = session.services
    runtime = session.runtime = AppRuntime(session, services.registry, services.config,
                                           llm_configured=services.llm_configured,
                                           conversations=services.conversations if session.keeps_history else None)
    runtime.adopt_default()
    for tool in runtime_tools(session, runtime):
        session.tools.add(tool)
    session.requests.serve_runtime(runtime)
    session.spawn(runtime.open_default())


async def _start_device_mcp(session):
    try:
        await session.mcp.start()
    except Exception as e:
        log.warning("[%s] device MCP unavailable: %s", session.device_id, e)
        return
    session.tools.replace_origin("device", session.mcp.as_tools())
    await _prime_model(session)


async def _prime_model(session):
    """The session's prompt head (the agent prompt, what is remembered, the
    tools) is known now: a model that keeps a prompt cache reads it before
    the child's first question (the local model: ~6 s on 2 cores)."""
    if session.runtime is not None:
        await session.runtime.memory.ready()
    await session.dialogue.prepare()
