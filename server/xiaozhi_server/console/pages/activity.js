// What the child did: talk time, lessons and translations per day; the
// moments the safety filter stepped in; transcripts, only when turned on.

import { api, devicePath } from "../api.js";
import { h, section, statusLine, field, describeError } from "../ui.js";
import { guardedCard } from "./guarded.js";

export async function render(root, ctx) {
  const deviceId = ctx.device.device_id;
  const zone = await deviceZone(deviceId);
  root.append(
    await guardedCard("The last 7 days", devicePath(deviceId, "/usage?days=7"), "The usage table",
                      (data) => usageTable(data.days || [])),
    await guardedCard("Moments to look at", devicePath(deviceId, "/flags"), "The review list",
                      (data) => flagList(deviceId, data.flags || [], ctx)),
    await guardedCard("Transcripts", devicePath(deviceId, "/privacy"), "Transcripts",
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
  return m ? m + " min" : (seconds ? "under a minute" : "none");
}

function usageTable(days) {
  if (!days.length) return h("p", { class: "note" }, "Nothing yet.");
  return h("table", { id: "usage" },
    h("thead", {}, h("tr", {}, h("th", {}, "Day"), h("th", {}, "Talk time"), h("th", {}, "Lessons"),
                     h("th", {}, "Translations"))),
    h("tbody", {}, [...days].reverse().map((d) => h("tr", { "data-date": d.date },   // newest first
      h("td", {}, d.date), h("td", { class: "talk" }, minutes(d.talk_seconds)),
      h("td", { class: "lessons" }, (d.lessons || []).length
        ? (d.lessons || []).map((l) => l.name + " (heard " + l.passes + (l.passes === 1 ? " time)" : " times)"))
            .join(", ") : "none"),
      h("td", { class: "translations" }, String(d.translations || 0))))));
}

function flagList(deviceId, flags, ctx) {
  if (!flags.length) return h("p", { class: "note" }, "Nothing to look at.");
  return h("ul", { class: "plain", id: "flags" }, flags.map((f) => {
    const status = statusLine();
    return h("li", {},
      h("div", {}, h("strong", {}, f.topic), " · ", new Date(f.at * 1000).toLocaleString()),
      h("div", {}, "The child said: “", f.child_said, "”"),
      f.reply_blocked ? h("div", { class: "note" }, "Held back: “", f.reply_blocked, "”") : null,
      h("div", { class: "note" }, "Said instead: “", f.redirect_line, "”"),
      h("button", { type: "button", class: "quiet", onclick: async () => {
        try { await api.del(devicePath(deviceId, "/flags/" + encodeURIComponent(f.id))); ctx.reload(); }
        catch (e) { status.show(describeError(e), "bad"); }
      } }, "Seen"), status);
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
      status.show("Saved.", "ok");
    } catch (err) {
      status.show(describeError(err), "bad");
    }
  } },
    h("p", { class: "note" }, "Off unless you turn it on. When on, what the child and the companion say is " +
      "kept for the days below, then deleted."),
    h("label", { class: "check" }, on, "Keep transcripts"), field("Keep them for (days)", days),
    h("button", { type: "submit" }, "Save"), status);

  const date = h("input", { type: "date", id: "transcript-date", value: new Date().toLocaleDateString("en-CA", { timeZone: zone }) });
  const out = h("div", { id: "transcript" });
  const show = async (e) => {
    e.preventDefault();
    try {
      const query = "?date=" + date.value + "&tz=" + encodeURIComponent(zone);
      const turns = (await api.get(devicePath(deviceId, "/transcripts" + query))).data.turns || [];
      out.replaceChildren(turns.length ? h("ul", { class: "plain" }, turns.map((t) => h("li", {},
        h("small", { class: "note" }, new Date(t.at * 1000).toLocaleTimeString()), h("div", {}, "Child: ", t.child),
        h("div", {}, "Companion: ", t.reply)))) : h("p", { class: "note" }, "Nothing kept for that day."));
    } catch (err) {
      out.replaceChildren(h("p", { class: "status bad" }, describeError(err)));
    }
  };
  const wipe = h("button", { type: "button", class: "danger", id: "delete-transcripts", onclick: async () => {
    if (!confirm("Delete every transcript of this device?")) return;
    try {
      await api.del(devicePath(deviceId, "/transcripts"));
      out.replaceChildren(h("p", { class: "status ok" }, "All transcripts deleted."));
    } catch (err) {
      out.replaceChildren(h("p", { class: "status bad" }, describeError(err)));
    }
  } }, "Delete all transcripts");
  return [settings, h("form", { class: "row", onsubmit: show }, field("Day", date),
                      h("button", { type: "submit", class: "quiet" }, "Show")), out, wipe];
}
