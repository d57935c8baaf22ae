// Limits: bedtime and a daily talk time (outside them the device says a
// kind line and does not chat; lessons a parent set still play), and the
// topics the companion steers away from, with the line it says instead.

import { api, devicePath } from "../api.js";
import { h, statusLine, field, describeError } from "../ui.js";
import { guardedCard } from "./guarded.js";
import { t } from "../i18n.js";

export async function render(root, ctx) {
  const deviceId = ctx.device.device_id;
  root.append(
    await guardedCard(t("limits.title"), devicePath(deviceId, "/limits"), t("limits.title"),
                      (data) => limitsForm(deviceId, data)),
    await guardedCard(t("topics.title"), devicePath(deviceId, "/topics"), t("topics.title"),
                      (data) => topicsForm(deviceId, data)));
}

function limitsForm(deviceId, data) {
  const bed = data.bedtime || { start: "20:30", end: "07:00" };
  const on = h("input", { type: "checkbox", id: "bedtime-on", checked: Boolean(data.bedtime) });
  const start = h("input", { type: "time", id: "bedtime-start", value: bed.start });
  const end = h("input", { type: "time", id: "bedtime-end", value: bed.end });
  const minutes = h("input", { type: "number", id: "talk-minutes", min: "1", max: "1440",
                               value: data.daily_talk_minutes || "", placeholder: t("limits.no_limit") });
  const zone = h("input", { id: "timezone", value: data.timezone || "", placeholder: "Asia/Shanghai" });
  const status = statusLine("limits-status");
  return h("form", { id: "limits-form", onsubmit: async (e) => {
    e.preventDefault();
    const body = { bedtime: on.checked ? { start: start.value, end: end.value } : null,
                   daily_talk_minutes: minutes.value ? Number(minutes.value) : null };
    if (zone.value.trim()) body.timezone = zone.value.trim();
    try {
      await api.put(devicePath(deviceId, "/limits"), body);
      status.show(t("common.saved"), "ok");
    } catch (err) {
      status.show(describeError(err), "bad");
    }
  } },
    h("p", { class: "note" }, t("limits.explain")),
    h("label", { class: "check" }, on, t("limits.bedtime")),
    h("div", { class: "row" }, field(t("limits.from"), start), field(t("limits.until"), end)),
    field(t("limits.talk_minutes"), minutes, t("limits.empty_no_limit")),
    field(t("limits.zone"), zone, t("limits.zone_hint")),
    h("button", { type: "submit", id: "save-limits" }, t("common.save")), status);
}

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
  const topics = h("textarea", { id: "topics", placeholder: t("topics.placeholder") });
  topics.value = (data.blocked_topics || []).join("\n");
  const synonyms = h("textarea", { id: "topic-synonyms", placeholder: t("topics.synonyms_placeholder") });
  synonyms.value = synonymLines(data.synonyms);
  // Left empty, the server's own kind line is said (shown greyed as the example).
  const line = h("input", { id: "redirect-line", value: data.redirect_default ? "" : data.redirect_line || "",
                            placeholder: data.redirect_line || "" });
  const status = statusLine("topics-status");
  return h("form", { id: "topics-form", onsubmit: async (e) => {
    e.preventDefault();
    const topicList = topics.value.split("\n").map((x) => x.trim()).filter(Boolean);
    const body = { blocked_topics: topicList, redirect_line: line.value.trim() || null,
                   synonyms: changedSynonyms(topicList, data.synonyms || {}, data.synonyms_edited || [],
                                             parseSynonyms(synonyms.value)) };
    try {
      const saved = await api.put(devicePath(deviceId, "/topics"), body);
      // the server's lists after the save (a new topic shows its built-in words)
      Object.assign(data, (saved && saved.data) || {});
      synonyms.value = synonymLines(data.synonyms);
      status.show(t("common.saved"), "ok");
    } catch (err) {
      status.show(describeError(err), "bad");
    }
  } },
    h("p", { class: "note" }, t("topics.explain")),
    field(t("topics.topics"), topics, t("topics.hint")),
    field(t("topics.synonyms"), synonyms, t("topics.synonyms_hint")),
    field(t("topics.instead"), line, t("topics.instead_hint")),
    h("button", { type: "submit", id: "save-topics" }, t("common.save")), status);
}
