// Limits: bedtime and a daily talk time (outside them the device says a
// kind line and does not chat; lessons a parent set still play), and the
// topics the companion steers away from, with the line it says instead.

import { api, devicePath } from "../api.js";
import { h, statusLine, field, describeError } from "../ui.js";
import { guardedCard } from "./guarded.js";

export async function render(root, ctx) {
  const deviceId = ctx.device.device_id;
  root.append(
    await guardedCard("Bedtime and talk time", devicePath(deviceId, "/limits"), "Bedtime and talk time",
                      (data) => limitsForm(deviceId, data)),
    await guardedCard("Topics to avoid", devicePath(deviceId, "/topics"), "Topics to avoid",
                      (data) => topicsForm(deviceId, data)));
}

function limitsForm(deviceId, data) {
  const bed = data.bedtime || { start: "20:30", end: "07:00" };
  const on = h("input", { type: "checkbox", id: "bedtime-on", checked: Boolean(data.bedtime) });
  const start = h("input", { type: "time", id: "bedtime-start", value: bed.start });
  const end = h("input", { type: "time", id: "bedtime-end", value: bed.end });
  const minutes = h("input", { type: "number", id: "talk-minutes", min: "1", max: "1440",
                               value: data.daily_talk_minutes || "", placeholder: "no limit" });
  const zone = h("input", { id: "timezone", value: data.timezone || "", placeholder: "Asia/Shanghai" });
  const status = statusLine("limits-status");
  return h("form", { id: "limits-form", onsubmit: async (e) => {
    e.preventDefault();
    const body = { bedtime: on.checked ? { start: start.value, end: end.value } : null,
                   daily_talk_minutes: minutes.value ? Number(minutes.value) : null };
    if (zone.value.trim()) body.timezone = zone.value.trim();
    try {
      await api.put(devicePath(deviceId, "/limits"), body);
      status.show("Saved.", "ok");
    } catch (err) {
      status.show(describeError(err), "bad");
    }
  } },
    h("p", { class: "note" }, "Outside these the device says a kind line and does not chat. Lessons you " +
      "start or schedule still play."),
    h("label", { class: "check" }, on, "Bedtime"),
    h("div", { class: "row" }, field("From", start), field("Until", end)),
    field("Talk time per day (minutes)", minutes, "Empty: no limit."),
    field("Device time zone", zone, "Bedtime and days follow this time zone."),
    h("button", { type: "submit", id: "save-limits" }, "Save"), status);
}

// The synonyms' strings, in one place (they move to the console's message tables).
const SYNONYM_TEXT = {
  label: "Also blocks",
  hint: "One topic per line: the topic, a colon, its words separated by commas. Change a line to use your own " +
    "words; delete it to go back to the built-in list.",
  placeholder: "ghosts: phantom, 幽灵",
};

// "topic: a, b" lines <-> {topic: [words]}: what each topic also blocks, as the parent reads and edits it.
function synonymLines(synonyms) {
  return Object.entries(synonyms || {}).map(([t, words]) => `${t}: ${words.join(", ")}`).join("\n");
}

function parseSynonyms(text) {
  const out = {};
  for (const raw of text.split("\n")) {
    const at = raw.search(/[:：]/);
    if (at < 1) continue;
    out[raw.slice(0, at).trim()] = raw.slice(at + 1).split(/[,，、]/).map((w) => w.trim()).filter(Boolean);
  }
  return out;
}

// Only the lines the parent changed are sent as their own list; a line deleted
// from a topic they had edited goes back to the built-in list (null).
function changedSynonyms(topicList, shown, edited, typed) {
  const out = {};
  for (const t of topicList) {
    if (t in typed) {
      if ((shown[t] || []).join("\u0000") !== typed[t].join("\u0000") || edited.includes(t)) out[t] = typed[t];
    } else if (edited.includes(t)) {
      out[t] = null;
    }
  }
  return out;
}

function topicsForm(deviceId, data) {
  const topics = h("textarea", { id: "topics", placeholder: "one topic per line" });
  topics.value = (data.blocked_topics || []).join("\n");
  const synonyms = h("textarea", { id: "topic-synonyms", placeholder: SYNONYM_TEXT.placeholder });
  synonyms.value = synonymLines(data.synonyms);
  // Left empty, the server's own kind line is said (shown greyed as the example).
  const line = h("input", { id: "redirect-line", value: data.redirect_default ? "" : data.redirect_line || "",
                            placeholder: data.redirect_line || "" });
  const status = statusLine("topics-status");
  return h("form", { id: "topics-form", onsubmit: async (e) => {
    e.preventDefault();
    const topicList = topics.value.split("\n").map((t) => t.trim()).filter(Boolean);
    const body = { blocked_topics: topicList, redirect_line: line.value.trim() || null,
                   synonyms: changedSynonyms(topicList, data.synonyms || {}, data.synonyms_edited || [],
                                             parseSynonyms(synonyms.value)) };
    try {
      const saved = await api.put(devicePath(deviceId, "/topics"), body);
      // the server's lists after the save (a new topic shows its built-in words)
      Object.assign(data, (saved && saved.data) || {});
      synonyms.value = synonymLines(data.synonyms);
      status.show("Saved.", "ok");
    } catch (err) {
      status.show(describeError(err), "bad");
    }
  } },
    h("p", { class: "note" }, "When the child or the companion touches one of these, the companion says the " +
      "line below instead, and the moment shows on the “What the child did” page."),
    field("Topics", topics, "One per line, in any language."),
    field(SYNONYM_TEXT.label, synonyms, SYNONYM_TEXT.hint),
    field("What the companion says instead", line, "Empty: the line shown in grey."),
    h("button", { type: "submit", id: "save-topics" }, "Save"), status);
}
