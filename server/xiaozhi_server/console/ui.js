// Small DOM helpers and the plain words the console uses for what the
// server and the device answer.

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
  return h("p", { class: "note unavailable" }, what + ": not available on this server.");
}

export function field(label, input, hint) {
  return h("label", { class: "field" }, h("span", {}, label), input, hint ? h("small", {}, hint) : null);
}

// What to tell a parent when a call failed.
export function describeError(e) {
  if (!e || e.status === undefined) return "Something went wrong: " + e;
  if (e.unavailable) return e.message;
  if (e.status === 0) return e.message;
  if (e.status === 401) return "You are logged out. Type the token again.";
  if (e.status === 403) return "The server refused this: " + e.message;
  if (e.code === "device_busy") return "The device has too much to do right now. Try again in a moment.";
  if (e.code === "broker_unavailable") return "The server cannot reach the devices right now. Try again in a moment.";
  if (e.status === 503) return "Not reachable right now (" + e.message + "). Try again in a moment.";
  return e.message;
}

// The board's ack reasons (shared/protocol/schemas/mqtt/ack.json, firmware/app/control).
const REASONS = {
  busy: "it is busy with something more important",
  lower_priority: "something more important is running",
  not_found: "that lesson is not on its card",
  skill_failed: "it could not do it",
  server_unreachable: "it cannot reach the server",
  invalid_request: "it did not understand the request",
  too_large: "the request was too big",
  invalid_alarm: "the schedule does not fit the device",
  replayed: "it had already handled a newer request",
  stale: "the request was too old when it arrived",
};

// The device's answer (rpt/ack) in plain words; null: no answer yet.
export function describeAck(ack) {
  if (!ack) return { text: "Sent. The device has not answered yet (it may be off or asleep).", kind: "" };
  if (ack.ok) return { text: "Done: the device started it.", kind: "ok" };
  const why = REASONS[ack.reason] || ack.message || ack.reason || "no reason given";
  return { text: "The device said no: " + why + ".", kind: "bad" };
}

export function ago(epochSeconds) {
  if (!epochSeconds) return "never";
  const s = Math.max(0, Math.round(Date.now() / 1000 - epochSeconds));
  if (s < 60) return "just now";
  if (s < 3600) return Math.round(s / 60) + " min ago";
  if (s < 86400) return Math.round(s / 3600) + " h ago";
  return new Date(epochSeconds * 1000).toLocaleString();
}

const APPS = { chat: "chatting", english_learning: "a lesson", english_translation: "translating" };

export function doing(app, task, player) {
  if (!app) return "nothing reported";
  let text = APPS[app] || app;
  if (app === "english_learning" && player && player.name) text += " (" + player.name + ")";
  return text;
}
