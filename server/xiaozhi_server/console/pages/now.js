// Now: what the device is doing, and start a lesson, translation or chat
// on it right away; the device's answer (its ack) shows in plain words.

import { api, devicePath } from "../api.js";
import { h, section, statusLine, field, describeError, describeAck, doing, ago } from "../ui.js";
import { lessonPicker } from "./lessons.js";

const WAIT_S = 10;   // how long the page waits for the device's answer
const REFRESH_MS = 5000;

export async function render(root, ctx) {
  const deviceId = ctx.device.device_id;
  const result = statusLine("now-result");
  const recent = h("div", { id: "recent-requests" });
  const state = h("div", { id: "now-state-card" });
  // What the device reports and what was asked of it: read again after each start.
  const showDevice = async () => {
    const { data } = await api.get(devicePath(deviceId));
    state.replaceChildren(stateCard(data));
    recent.replaceChildren(recentList(data.recent_requests || []));
  };
  const start = async (body, what) => {
    result.show("Sending " + what + "…");
    try {
      const { data } = await api.post(devicePath(deviceId, "/tasks?wait=" + WAIT_S), body);
      const said = describeAck(data.ack);
      result.show(said.text, said.kind);
      result.dataset.outcome = data.ack ? (data.ack.ok ? "ok" : "refused") : "no-answer";
    } catch (e) {
      result.show(describeError(e), "bad");
      result.dataset.outcome = "error";
    }
    await showDevice().catch(() => {});
  };

  await showDevice();
  root.append(state);
  // Kept fresh while the page shows: the device reports when a lesson starts or ends.
  const timer = setInterval(() => {
    if (!root.isConnected) clearInterval(timer);
    else showDevice().catch(() => {});
  }, REFRESH_MS);

  const lesson = await lessonPicker(deviceId, "now", null);
  const repeat = h("input", { id: "now-repeat", type: "number", min: "1", max: "100", value: "1" });
  const powerOff = h("input", { id: "now-power-off", type: "checkbox" });
  const lessonForm = h("form", { id: "lesson-form", onsubmit: (e) => {
    e.preventDefault();
    const params = { name: lesson.value(), repeat: Number(repeat.value) || 1 };
    if (powerOff.checked) params.power_off_after = true;
    start({ app_id: "english_learning", task_id: "repeater", params }, "the lesson");
  } }, lesson.el, field("Times to play it", repeat),
    h("label", { class: "check" }, powerOff, "Turn the device off when it is done"),
    h("button", { type: "submit", id: "start-lesson" }, "Play now"));

  root.append(
    section("Play a lesson", lessonForm),
    section("Talk", h("div", { class: "row" },
      h("button", { type: "button", id: "start-translation",
                    onclick: () => start({ app_id: "english_translation" }, "translation") }, "Start translation"),
      h("button", { type: "button", id: "start-chat",
                    onclick: () => start({ app_id: "chat" }, "chat") }, "Start chat"),
      h("button", { type: "button", id: "stop", class: "danger",
                    onclick: () => start({ app_id: "chat" }, "stop") }, "Stop")),
      h("p", { class: "note" }, "Stop ends a lesson or translation: the device goes back to chatting, " +
        "as it does by itself when a lesson ends.")),
    section("What the device said", result, h("h3", {}, "Earlier"), recent));
}

function stateCard(d) {
  const report = d.state ? d.state.report || {} : null;
  if (!report) return section("Right now", h("p", { id: "now-state", class: "note" }, "The device has not reported yet."));
  const player = report.player || {};
  const lines = [h("span", {}, "Doing: " + doing(report.active_app_id, report.active_task_id, player))];
  if (player.state) lines.push(h("span", {}, "Player: " + player.state));
  lines.push(h("span", {}, "Reported " + ago(d.state.received_at)));
  return section("Right now", h("p", { id: "now-state", class: "facts" }, lines));
}

const ASKED = {
  START_APP_TASK: (p) => ({ english_learning: "Play " + ((p.params || {}).name || "a lesson"),
                           english_translation: "Start translation", chat: "Chat (or stop)" })[p.app_id] || p.app_id,
  SET_ALARM: () => "Set a schedule",
  UNSET_ALARM: () => "Remove a schedule",
};

function recentList(requests) {
  if (!requests.length) return h("p", { class: "note" }, "Nothing sent yet.");
  return h("ul", { class: "plain", id: "recent" }, requests.slice(0, 5).map((r) => {
    const said = describeAck(r.ack);
    const asked = ASKED[r.action] ? ASKED[r.action](r.payload || {}) : r.action;
    const when = r.sent_at ? h("small", { class: "note" }, new Date(r.sent_at * 1000).toLocaleString() + " ") : null;
    return h("li", {}, when, asked, ": ",
             h("span", { class: "status " + said.kind }, said.text));
  }));
}
