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

function topicsForm(deviceId, data) {
  const topics = h("textarea", { id: "topics", placeholder: t("topics.placeholder") });
  topics.value = (data.blocked_topics || []).join("\n");
  // Left empty, the server's own kind line is said (shown greyed as the example).
  const line = h("input", { id: "redirect-line", value: data.redirect_default ? "" : data.redirect_line || "",
                            placeholder: data.redirect_line || "" });
  const status = statusLine("topics-status");
  return h("form", { id: "topics-form", onsubmit: async (e) => {
    e.preventDefault();
    const body = { blocked_topics: topics.value.split("\n").map((x) => x.trim()).filter(Boolean),
                   redirect_line: line.value.trim() || null };
    try {
      await api.put(devicePath(deviceId, "/topics"), body);
      status.show(t("common.saved"), "ok");
    } catch (err) {
      status.show(describeError(err), "bad");
    }
  } },
    h("p", { class: "note" }, t("topics.explain")),
    field(t("topics.topics"), topics, t("topics.hint")),
    field(t("topics.instead"), line, t("topics.instead_hint")),
    h("button", { type: "submit", id: "save-topics" }, t("common.save")), status);
}
