"""The browser page aborts a reply by typing over it (abort with reason
wake_word_detected, then listen detect with the new text). The reply's
sentence stream is closed at once, never left to the garbage collector:
there, the chain of async generators (sentences -> LLM stream -> HTTP body)
was finalised by several tasks at once and asyncio logged "Task exception
was never retrieved ... aclose(): asynchronous generator is already running"."""
import asyncio
import gc
import logging

from testkit.server import server_config

from outside import QUIET, OutsideClient

LONG = "😊 " + " ".join("This is sentence number %d of a long story that goes on and on." % i
                        for i in range(1, 13))


class Recorder(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += " %r" % (record.exc_info[1],)
        self.lines.append(text)


async def test_typing_over_replies_leaves_no_unretrieved_task(fake_llm, start_server):
    gc.collect()   # earlier tests' leftovers in this process are theirs, not this session's
    rec = Recorder()
    logging.getLogger().addHandler(rec)
    try:
        for _ in range(4):
            fake_llm.reply(LONG, chunk_delay=0.02)   # the LLM stream stays open while it speaks
        fake_llm.reply("🙂 Okay, the short answer: it ended happily.")
        server = await start_server(server_config(fake_llm.base_url, apps=QUIET))
        async with OutsideClient(server.ws.url, "browser_page") as page:
            await page.hello()
            await page.send("wake_detect")
            await page.send("listen_start_auto")
            for i in range(4):
                # wait until the reply is being heard, then type over it as the page does
                n = len(page.audio)
                await page.wait_for(lambda: len(page.audio) >= n + 8, timeout=30)
                await page.send("abort_wake")
                await page.send("text", TEXT="tell me more %d" % i)
                await page.wait_json("stt", text="tell me more %d" % i, timeout=10)
            await page.wait_for(lambda: "ended happily" in " ".join(page.texts()), timeout=30)
            last = max(t for t, m in page.json if m.get("state") == "sentence_start")
            await page.wait_json("tts", state="stop", since=last, timeout=30)
        for _ in range(200):     # the server ends the session once the page has gone
            if not server.services.sessions:
                break
            await asyncio.sleep(0.05)
        assert not server.services.sessions
        for _ in range(3):       # let finalisers run, then collect the tasks they made
            gc.collect()
            await asyncio.sleep(0.05)
    finally:
        logging.getLogger().removeHandler(rec)
    bad = [line for line in rec.lines if "never retrieved" in line or "already running" in line]
    assert bad == []
