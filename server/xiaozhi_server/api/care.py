"""The parents' routes for what the family keeps per device (mixed into
api.ControlApi): blocked topics and the safety filter's flags, privacy and
transcripts, the chat app's memory of the child. The records are
store/care.py's; docs/api.md says what each route takes and answers."""
from __future__ import annotations

import datetime
import zoneinfo

from aiohttp import web

from ..pipeline.care import clean_profile
from ..safety import expansions
from ..control import checks
from ..errors import BadRequest, Conflict, NotFound
from ..store.care import day_bounds

MAX_TOPICS = 100
MAX_TOPIC = 60
MAX_REDIRECT = 200
MAX_SYNONYMS = 20           # per topic: a small list a parent reads at a glance
MAX_RETENTION_DAYS = 365
# The line a blocked turn gets when the parent set none (the voice side
# speaks the lines file's `safety_redirect` in the child's language).
DEFAULT_REDIRECT = "我们聊点别的吧！你想听个故事吗？"


def _fields(body, allowed):
    for k in body:
        if k not in allowed:
            raise BadRequest("%s: unknown field (expected %s)" % (k, ", ".join(allowed)))


def _topics_out(t):
    """The topics as a parent sees them: each with what it also blocks (their
    own list where they edited it, else the built-in one), and which they edited."""
    line = t["redirect_line"]
    edited = t.get("synonyms") or {}
    return {"blocked_topics": t["blocked_topics"], "redirect_line": line or DEFAULT_REDIRECT,
            "redirect_default": line is None,
            "synonyms": {x: edited[x] if x in edited else expansions(x) for x in t["blocked_topics"]},
            "synonyms_edited": [x for x in t["blocked_topics"] if x in edited]}


def _synonyms(value, kept, before):
    """The parent's edited lists after a PUT: `value` ({topic: [words] or null}) over
    the edits kept `before`, for the topics still listed (`kept`)."""
    out = {k: v for k, v in before.items() if k in kept}
    if value is None:
        return out
    if not isinstance(value, dict):
        raise BadRequest("synonyms must be an object: {topic: [words] or null for the built-in list}")
    by_fold = {k.casefold(): k for k in kept}
    for topic, words in value.items():
        key = by_fold.get(topic.strip().casefold())
        if key is None:
            raise BadRequest("synonyms.%s: not one of blocked_topics" % topic)
        if words is None:
            out.pop(key, None)
            continue
        if not isinstance(words, list) or len(words) > MAX_SYNONYMS or not all(
                isinstance(w, str) and 0 < len(w.strip()) <= MAX_TOPIC for w in words):
            raise BadRequest("synonyms.%s must be a list of at most %d words of 1-%d characters, or null"
                             % (topic, MAX_SYNONYMS, MAX_TOPIC))
        out[key] = list(dict.fromkeys(w.strip() for w in words))
    return out


class CareApi:
    """Mixed into api.ControlApi: its _path, _body and _json, its plane."""

    def _care(self, request):
        """(the device id of the path, the store's family records)."""
        return checks.device_id(self._path(request, "device_id")), self.plane.store.care

    # ---- blocked topics and flags ----

    async def get_topics(self, request):
        device_id, care = self._care(request)
        return self._json(_topics_out(await care.topics(device_id)))

    async def put_topics(self, request):
        device_id, care = self._care(request)
        body = await self._body(request)
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        _fields(body, ("blocked_topics", "redirect_line", "synonyms"))
        topics = body.get("blocked_topics")
        if not isinstance(topics, list) or len(topics) > MAX_TOPICS:
            raise BadRequest("blocked_topics is required: a list of at most %d words or phrases" % MAX_TOPICS)
        kept, seen = [], set()
        for i, t in enumerate(topics):
            if not isinstance(t, str) or not 0 < len(t.strip()) <= MAX_TOPIC:
                raise BadRequest("blocked_topics[%d] must be a word or phrase of 1-%d characters" % (i, MAX_TOPIC))
            if t.strip().casefold() not in seen:
                seen.add(t.strip().casefold())
                kept.append(t.strip())
        line = body.get("redirect_line")
        if line is not None and (not isinstance(line, str) or not 0 < len(line.strip()) <= MAX_REDIRECT):
            raise BadRequest("redirect_line must be a line of 1-%d characters, or null for the default"
                             % MAX_REDIRECT)
        synonyms = _synonyms(body.get("synonyms"), kept, (await care.topics(device_id)).get("synonyms") or {})
        await care.set_topics(device_id, kept, line.strip() if line else None, synonyms)
        return self._json(_topics_out(await care.topics(device_id)))

    async def list_flags(self, request):
        device_id, care = self._care(request)
        return self._json({"flags": await care.flags(device_id)})

    async def review_flag(self, request):
        device_id, care = self._care(request)
        flag_id = self._path(request, "flag_id")
        if not await care.review_flag(device_id, flag_id):
            raise NotFound("device %s has no flag %s waiting for review" % (device_id, flag_id))
        return web.Response(status=204)

    # ---- privacy and transcripts ----

    async def get_privacy(self, request):
        device_id, care = self._care(request)
        return self._json(await care.privacy(device_id))

    async def put_privacy(self, request):
        device_id, care = self._care(request)
        body = await self._body(request)
        if not isinstance(body, dict) or not body:
            raise BadRequest("the body must be a JSON object with transcripts, retention_days and/or memory")
        _fields(body, ("transcripts", "retention_days", "memory"))
        for k in ("transcripts", "memory"):
            if k in body and not isinstance(body[k], bool):
                raise BadRequest("%s must be true or false" % k)
        days = body.get("retention_days", 1)
        if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_RETENTION_DAYS:
            raise BadRequest("retention_days must be a whole number of days from 1 to %d" % MAX_RETENTION_DAYS)
        return self._json(await care.set_privacy(device_id, body))

    async def list_transcripts(self, request):
        device_id, care = self._care(request)
        date, tz_name = request.query.get("date"), request.query.get("tz", "UTC")
        try:
            tz = zoneinfo.ZoneInfo(tz_name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise BadRequest("tz must be an IANA time zone such as Asia/Shanghai (default UTC)")
        if date is None:
            date = datetime.datetime.now(tz).date().isoformat()
        try:
            start, end = day_bounds(date, tz)
        except (ValueError, OverflowError):     # 9999-12-31: its next day is past the calendar
            raise BadRequest("date must be a day as YYYY-MM-DD")
        privacy = await care.privacy(device_id)
        return self._json({"date": date, "tz": tz_name, "transcripts": privacy["transcripts"],
                      "turns": await care.turns(device_id, start, end)})

    async def delete_transcripts(self, request):
        device_id, care = self._care(request)
        return self._json({"deleted": await care.delete_turns(device_id)})

    # ---- memory ----

    async def get_memory(self, request):
        device_id, care = self._care(request)
        return self._json(await care.memory(device_id))

    async def put_memory(self, request):
        device_id, care = self._care(request)
        body = await self._body(request)
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        _fields(body, ("enabled", "profile"))
        enabled = body.get("enabled")
        if enabled is not None and not isinstance(enabled, bool):
            raise BadRequest("enabled must be true or false")
        profile = None
        if "profile" in body:
            profile, err = clean_profile(body["profile"])
            if err:
                raise BadRequest(err)
            if enabled is False:
                raise Conflict("a profile is not kept with memory off (enabled: false)")
        if enabled is not None:
            await care.set_privacy(device_id, {"memory": enabled})
        if profile is not None and not await care.set_memory(device_id, profile):
            raise Conflict("memory is off for device %s: turn it on first (enabled: true)" % device_id)
        return self._json(await care.memory(device_id))

    async def delete_memory(self, request):
        device_id, care = self._care(request)
        await care.erase_memory(device_id)
        return self._json(await care.memory(device_id))
