// Small DOM helpers and the plain words the console uses for what the
// server and the device answer (words from the message tables, i18n.js).

import { t, when } from "./i18n.js";

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "value") el.value = value;
    else if (key === "checked") el.checked = Boolean(value);
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

// A status line a page updates: ok (green), bad (red) or plain.
export function statusLine(id) {
  const el = h("p", { id, class: "status", role: "status", "aria-live": "polite" });
  el.show = (text, kind = "") => {
    el.textContent = text;
    el.className = "status " + kind;
  };
  return el;
}

export function section(title, ...children) {
  return h("section", { class: "card" }, h("h2", {}, title), ...children);
}

export function unavailable(what) {
  return h("p", { class: "note unavailable" }, t("ui.unavailable", { what }));
}

export function field(label, input, hint) {
  return h("label", { class: "field" }, h("span", {}, label), input, hint ? h("small", {}, hint) : null);
}

// What to tell a parent when a call failed.
export function describeError(e) {
  if (!e || e.status === undefined) return t("error.generic", { what: String(e) });
  if (e.unavailable) return e.message;
  if (e.status === 0) return e.message;
  if (e.status === 401) return t("login.logged_out");
  if (e.status === 403) return t("error.refused", { message: e.message });
  if (e.code === "device_busy") return t("error.device_busy");
  if (e.code === "broker_unavailable") return t("error.broker_unavailable");
  if (e.status === 503) return t("error.unreachable", { message: e.message });
  return e.message;
}

// The board's ack reasons (shared/protocol/schemas/mqtt/ack.json, firmware/app/control).
const REASONS = ["busy", "lower_priority", "not_found", "skill_failed", "server_unreachable", "invalid_request",
                 "too_large", "invalid_alarm", "replayed", "stale"];

// The device's answer (rpt/ack) in plain words; null: no answer yet.
export function describeAck(ack) {
  if (!ack) return { text: t("ack.none"), kind: "" };
  if (ack.ok) return { text: t("ack.ok"), kind: "ok" };
  const why = REASONS.includes(ack.reason) ? t("ack.reason." + ack.reason)
    : ack.message || ack.reason || t("ack.no_reason");
  return { text: t("ack.refused", { why }), kind: "bad" };
}

export function ago(epochSeconds, timeZone) {
  if (!epochSeconds) return t("time.never");
  const s = Math.max(0, Math.round(Date.now() / 1000 - epochSeconds));
  if (s < 60) return t("time.just_now");
  if (s < 3600) return t("time.min_ago", { n: Math.round(s / 60) });
  if (s < 86400) return t("time.h_ago", { n: Math.round(s / 3600) });
  return when(epochSeconds, timeZone);
}

const APPS = ["chat", "english_learning", "english_translation"];

export function doing(app, task, player) {
  if (!app) return t("doing.nothing");
  let text = APPS.includes(app) ? t("doing." + app) : app;
  if (app === "english_learning" && player && player.name) text += " (" + player.name + ")";
  return text;
}
