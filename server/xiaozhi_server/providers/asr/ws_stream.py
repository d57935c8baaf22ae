"""The connection lifecycle of the WebSocket streaming recognizers
(funasr.py, volcengine.py), written once: one connection per utterance,
audio queued while it connects, a reader beside the writer, and every way
the service can fail ending the utterance as one AsrError out of finish().

A provider's stream subclasses WsAsrStream and writes its protocol only:
- `_connect()`: an open `websockets` connection (the provider's handshake);
- `_send_all(ws)`: the request, then the audio `_outbox` holds up to END,
  then the end of speech; it sets `_ended` before sending that end;
- `_take(frame)`: apply one server message, True when the stream is over
  (the final text set, or `_fail` called);
- `_server_closed()`: the server closed cleanly after its last frame
  (by default: before the final text, a "closed" error).
"""
import asyncio
import logging

from .base import AsrError, AsrStream

log = logging.getLogger(__name__)

END = object()   # queued behind the audio at the end of speech


class WsAsrStream(AsrStream):
    """One utterance on one connection: audio queues while it connects."""

    def __init__(self, asr, on_partial=None):
        super().__init__(on_partial)
        self.asr = asr
        self._outbox = asyncio.Queue()
        self._result = asyncio.get_running_loop().create_future()
        self._connected = asyncio.Event()
        self._ended = False
        # The task's first step runs once the caller yields to the loop, so
        # a subclass's fields set after this __init__ are there for it.
        self._task = asyncio.create_task(self._run())

    async def push(self, pcm16k):
        if pcm16k and not self._result.done():
            self._outbox.put_nowait(bytes(pcm16k))

    async def finish(self):
        self._outbox.put_nowait(END)
        # The final text is due final_timeout after the end of speech, once
        # connected (the connection has its own connect_timeout).
        connected = asyncio.ensure_future(self._connected.wait())
        await asyncio.wait({connected, self._result}, return_when=asyncio.FIRST_COMPLETED)
        connected.cancel()
        try:
            return await asyncio.wait_for(asyncio.shield(self._result), self.asr.final_timeout)
        except asyncio.TimeoutError:
            self._fail("timeout", "no final text %.1f s after the end of speech" % self.asr.final_timeout)
            return self._result.result()   # raises the AsrError just set
        finally:
            await self.cancel()   # a no-op once the final text is in

    async def cancel(self):
        r = self._result
        if r.done() and not r.cancelled() and r.exception() is None:
            return   # finished: the connection is closing itself
        if not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if not r.done():
            r.cancel()

    def _fail(self, reason, detail, status=None):
        if not self._result.done():
            err = AsrError(self.asr.name, reason, detail, status)
            log.debug("%s", err)   # the caller logs it once (pipeline/asr.py, the fallback chain)
            self._result.set_exception(err)

    def _connect(self):
        raise NotImplementedError

    async def _send_all(self, ws):
        raise NotImplementedError

    def _take(self, frame):
        raise NotImplementedError

    def _server_closed(self):
        self._fail("closed", "%s closed the connection before the final text" % self.asr.url)

    async def _run(self):
        from websockets.exceptions import ConnectionClosed, InvalidStatus
        asr = self.asr
        try:
            ws = await asyncio.wait_for(self._connect(), asr.connect_timeout)
        except asyncio.TimeoutError:
            return self._fail("timeout", "could not connect to %s within %.1f s" % (asr.url, asr.connect_timeout))
        except InvalidStatus as exc:
            status = exc.response.status_code
            return self._fail("auth" if status in (401, 403) else "refused",
                              "%s answered HTTP %d to the WebSocket handshake" % (asr.url, status), status)
        except Exception as exc:   # refused, unreachable, TLS, not a WebSocket server
            return self._fail("connection", "%s: %s" % (asr.url, exc or type(exc).__name__))
        self._connected.set()
        reader = asyncio.create_task(self._read(ws))
        try:
            await self._send_all(ws)
            # The reader ends with the final text, or the result is settled
            # while the reader still waits for a frame that will not come.
            await asyncio.wait({reader, self._result}, return_when=asyncio.FIRST_COMPLETED)
            await ws.close()   # the polite end, bounded by close_timeout
        except ConnectionClosed as exc:
            await asyncio.gather(reader, return_exceptions=True)
            self._fail("closed", "%s closed the connection (%s)" % (asr.url, exc))
        except Exception as exc:   # anything else on the wire still ends the utterance now
            self._fail("bad_response", "%s: %r" % (asr.url, exc))
        finally:
            reader.cancel()
            # Cancelled (the utterance was dropped) or failed: no close handshake to wait for.
            ws.transport.abort()

    async def _read(self, ws):
        from websockets.exceptions import ConnectionClosed
        try:
            async for frame in ws:
                if self._take(frame) or self._result.done():
                    return
        except ConnectionClosed as exc:
            return self._fail("closed", "%s closed the connection before the final text (%s)"
                              % (self.asr.url, exc))
        self._server_closed()
