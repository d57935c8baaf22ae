// What the child did: talk time, lessons and translations per day; the
// moments the safety filter stepped in; transcripts, only when turned on.

import { api, devicePath } from "../api.js";
import { h, section, statusLine, field, describeError } from "../ui.js";
import { guardedCard } from "./guarded.js";
import { t, when, lang } from "../i18n.js";

export async function render(root, ctx) {
  const deviceId = ctx.device.device_id;
  const zone = await deviceZone(deviceId);
  root.append(
    await guardedCard(t("activity.last7"), devicePath(deviceId, "/usage?days=7"), t("activity.usage_table"),
                      (data) => usageTable(data.days || [])),
    await guardedCard(t("activity.moments"), devicePath(deviceId, "/flags"), t("activity.review_list"),
                      (data) => flagList(deviceId, data.flags || [], zone, ctx)),
    await guardedCard(t("activity.transcripts"), devicePath(deviceId, "/privacy"), t("activity.transcripts"),
                      (data) => transcripts(deviceId, data, zone)));
}

// Days are the device's days: its time zone from its limits, else this phone's.
async function deviceZone(deviceId) {
  try {
    const { data } = await api.get(devicePath(deviceId, "/limits"));
    if (data.timezone) return data.timezone;
  } catch (e) {
    if (e.status === 401) throw e;
  }
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

function minutes(seconds) {
  const m = Math.round((seconds || 0) / 60);
  return m ? t("activity.min", { n: m }) : (seconds ? t("activity.under_minute") : t("activity.none"));
}

function usageTable(days) {
  if (!days.length) return h("p", { class: "note" }, t("activity.nothing_yet"));
  return h("table", { id: "usage" },
    h("thead", {}, h("tr", {}, h("th", {}, t("activity.day")), h("th", {}, t("activity.talk")),
                     h("th", {}, t("activity.lessons")), h("th", {}, t("activity.translations")))),
    h("tbody", {}, [...days].reverse().map((d) => h("tr", { "data-date": d.date },   // newest first
      h("td", {}, d.date), h("td", { class: "talk" }, minutes(d.talk_seconds)),
      h("td", { class: "lessons" }, (d.lessons || []).length
        ? (d.lessons || []).map((l) => l.name + " " + t(l.passes === 1 ? "activity.heard_once" : "activity.heard_n",
                                                          { n: l.passes })).join(", ") : t("activity.none")),
      h("td", { class: "translations" }, String(d.translations || 0))))));
}

function flagList(deviceId, flags, zone, ctx) {
  if (!flags.length) return h("p", { class: "note" }, t("activity.no_moments"));
  return h("ul", { class: "plain", id: "flags" }, flags.map((f) => {
    const status = statusLine();
    return h("li", {},
      h("div", {}, h("strong", {}, f.topic), " · ", when(f.at, zone)),
      h("div", {}, t("activity.child_said"), "“", f.child_said, "”"),
      f.reply_blocked ? h("div", { class: "note" }, t("activity.held_back"), "“", f.reply_blocked, "”") : null,
      h("div", { class: "note" }, t("activity.said_instead"), "“", f.redirect_line, "”"),
      h("button", { type: "button", class: "quiet", onclick: async () => {
        try { await api.del(devicePath(deviceId, "/flags/" + encodeURIComponent(f.id))); ctx.reload(); }
        catch (e) { status.show(describeError(e), "bad"); }
      } }, t("activity.seen")), status);
  }));
}

function transcripts(deviceId, privacy, zone) {
  const on = h("input", { type: "checkbox", id: "transcripts-on", checked: privacy.transcripts });
  const days = h("input", { type: "number", id: "retention-days", min: "1", max: "365",
                            value: privacy.retention_days || 7 });
  const status = statusLine("privacy-status");
  const settings = h("form", { id: "privacy-form", onsubmit: async (e) => {
    e.preventDefault();
    try {
      await api.put(devicePath(deviceId, "/privacy"), { transcripts: on.checked,
                                                        retention_days: Number(days.value) || 7 });
      status.show(t("common.saved"), "ok");
    } catch (err) {
      status.show(describeError(err), "bad");
    }
  } },
    h("p", { class: "note" }, t("activity.transcripts_explain")),
    h("label", { class: "check" }, on, t("activity.keep")), field(t("activity.keep_days"), days),
    h("button", { type: "submit" }, t("common.save")), status);

  const date = h("input", { type: "date", id: "transcript-date", value: new Date().toLocaleDateString("en-CA", { timeZone: zone }) });
  const out = h("div", { id: "transcript" });
  const show = async (e) => {
    e.preventDefault();
    try {
      const query = "?date=" + date.value + "&tz=" + encodeURIComponent(zone);
      const turns = (await api.get(devicePath(deviceId, "/transcripts" + query))).data.turns || [];
      out.replaceChildren(turns.length ? h("ul", { class: "plain" }, turns.map((turn) => h("li", {},
        h("small", { class: "note" }, clock(turn.at, zone)), h("div", {}, t("activity.child"), turn.child),
        h("div", {}, t("activity.companion"), turn.reply)))) : h("p", { class: "note" }, t("activity.nothing_kept")));
    } catch (err) {
      out.replaceChildren(h("p", { class: "status bad" }, describeError(err)));
    }
  };
  const wipe = h("button", { type: "button", class: "danger", id: "delete-transcripts", onclick: async () => {
    if (!confirm(t("activity.delete_confirm"))) return;
    try {
      await api.del(devicePath(deviceId, "/transcripts"));
      out.replaceChildren(h("p", { class: "status ok" }, t("activity.deleted")));
    } catch (err) {
      out.replaceChildren(h("p", { class: "status bad" }, describeError(err)));
    }
  } }, t("activity.delete_all"));
  return [settings, h("form", { class: "row", onsubmit: show }, field(t("activity.day"), date),
                      h("button", { type: "submit", class: "quiet" }, t("activity.show"))), out, wipe];
}

// A time of day in the device's zone.
function clock(epochSeconds, zone) {
  return new Date(epochSeconds * 1000).toLocaleTimeString(lang === "zh" ? "zh-CN" : "en-GB", { timeZone: zone });
}
