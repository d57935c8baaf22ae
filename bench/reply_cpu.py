"""CPU time of the reply path's parts, one unit of work at a time.

    .venv/bin/python -m bench.reply_cpu

The concurrency section's CPU figures depend on how much of the machine
the server got (a starved server serves fewer turns and so spends less);
these are process CPU seconds per unit, which a busy machine moves much
less: one LLM stream through the OpenAI provider (the scripted model in
its own process, 12 tools, 21 messages of history), one paced frame with
100 replies at once (a no-op send, so the pacing alone), one 60 ms reply
frame resampled and Opus-encoded.
"""
import asyncio
import time

from xiaozhi_server.pipeline.opus import OpusEncoder
from xiaozhi_server.pipeline.pacer import Pacer
from xiaozhi_server.audio.resample import Resampler
from xiaozhi_server.providers import create

from .fakes import tone_pcm
from .llm_process import LlmProcess
from .report import Figure, table

ANSWER = "Sure, here is a story about a cat who likes to play in the garden."
TOOLS = [{"type": "function", "function": {
    "name": "tool_%d" % i, "description": "does thing %d for the child" % i,
    "parameters": {"type": "object", "required": ["a"], "properties": {
        "a": {"type": "string", "description": "what"}, "b": {"type": "integer"}}}}} for i in range(12)]
MESSAGES = [{"role": "system", "content": "You are a friendly companion. " * 20}] + [
    {"role": "user" if i % 2 == 0 else "assistant", "content": "earlier words of the chat %d" % i} for i in range(20)]


async def llm_ms(url, requests=200, at_once=10):
    llm = create("llm", {"type": "openai", "base_url": url, "api_key": "bench", "model": "m"})
    await llm.warm_up()

    async def one():
        return [e async for e in llm.stream_chat(MESSAGES, TOOLS)]
    await one()
    cpu = time.process_time()
    for _ in range(requests // at_once):
        events = await asyncio.gather(*(one() for _ in range(at_once)))
    cpu = time.process_time() - cpu
    if events[0][-1].kind != "done":
        raise RuntimeError("the scripted model did not answer: %r" % events[0][-1])
    return 1000.0 * cpu / requests


async def pacer_us(replies=100, frames=100):
    async def sink(frame):
        pass

    async def reply(i):
        await asyncio.sleep(0.0037 * i)     # replies start at odd moments, as sessions do
        pacer = Pacer(sink)
        for _ in range(frames):
            await pacer.send(b"x" * 240)
        await pacer.drain()
    cpu = time.process_time()
    await asyncio.gather(*(reply(i) for i in range(replies)))
    return 1e6 * (time.process_time() - cpu) / (replies * frames)


def encode_us(seconds=10.0):
    pcm = tone_pcm(int(seconds * 1000), 22050)
    cpu = time.process_time()
    resampler, encoder = Resampler(22050), OpusEncoder()
    frames = encoder.encode(resampler.process(pcm) + resampler.flush()) + encoder.flush()
    return 1e6 * (time.process_time() - cpu) / len(frames)


async def run():
    with LlmProcess(ANSWER) as llm:
        ms = await llm_ms(llm.base_url)
    return [
        Figure("LLM stream, CPU per request", ms, "ms", note="OpenAI provider, scripted model, 12 tools, 21 messages"),
        Figure("pacing, CPU per frame", await pacer_us(), "us", note="100 replies at once, no-op send"),
        Figure("resample + encode, CPU per frame", encode_us(), "us", note="22.05 kHz tone -> 24 kHz 60 ms Opus"),
    ]


if __name__ == "__main__":
    print(table("reply path CPU, per unit of work", asyncio.run(run())))
