// Now: what the device is doing, and start a lesson, translation or chat
// on it right away; the device's answer (its ack) shows in plain words.

import { api, devicePath } from "../api.js";
import { h, section, statusLine, field, describeError, describeAck, doing, ago } from "../ui.js";
import { t, when } from "../i18n.js";
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
    state.replaceChildren(stateCard(data, ctx.timezone));
    recent.replaceChildren(recentList(data.recent_requests || [], ctx.timezone));
  };
  const start = async (body, what) => {
    result.show(t("now.sending", { what: t("now.what." + what) }));
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

  const lesson = await lessonPicker(deviceId, "now", null, (ctx.device.greyed || {}).lessons);
  const repeat = h("input", { id: "now-repeat", type: "number", min: "1", max: "100", value: "1" });
  const powerOff = h("input", { id: "now-power-off", type: "checkbox" });
  const lessonForm = h("form", { id: "lesson-form", onsubmit: (e) => {
    e.preventDefault();
    const params = { name: lesson.value(), repeat: Number(repeat.value) || 1 };
    if (powerOff.checked) params.power_off_after = true;
    start({ app_id: "english_learning", task_id: "repeater", params }, "lesson");
  } }, lesson.el, field(t("now.times"), repeat),
    h("label", { class: "check" }, powerOff, t("now.power_off")),
    h("button", { type: "submit", id: "start-lesson" }, t("now.play")));

  // A device that only talks (no control channel) takes no task: its
  // buttons are greyed, and the page says why.
  const why = (ctx.device.greyed || {}).start;
  const buttons = [
    h("button", { type: "button", id: "start-translation",
                  onclick: () => start({ app_id: "english_translation" }, "translation") }, t("now.start_translation")),
    h("button", { type: "button", id: "start-chat",
                  onclick: () => start({ app_id: "chat" }, "chat") }, t("now.start_chat")),
    h("button", { type: "button", id: "stop", class: "danger",
                  onclick: () => start({ app_id: "chat" }, "stop") }, t("now.stop"))];
  if (why) {
    for (const b of [...buttons, lessonForm.querySelector("#start-lesson")]) b.disabled = true;
  }
  if (why) root.append(h("p", { id: "now-greyed", class: "status bad" }, t("greyed.why." + why)));
  root.append(
    section(t("now.play_title"), lessonForm),
    section(t("now.talk"), h("div", { class: "row" }, buttons), h("p", { class: "note" }, t("now.stop_note"))),
    section(t("now.said_title"), result, h("h3", {}, t("now.earlier")), recent));
}

function stateCard(d, timeZone) {
  const report = d.state ? d.state.report || {} : null;
  if (!report) return section(t("now.right_now"), h("p", { id: "now-state", class: "note" }, t("now.not_reported")));
  const player = report.player || {};
  const lines = [h("span", {}, t("devices.doing", { what: doing(report.active_app_id, report.active_task_id, player) }))];
  if (player.state) lines.push(h("span", {}, t("now.player", { state: t("now.player." + player.state) })));
  lines.push(h("span", {}, t("now.reported", { when: ago(d.state.received_at, timeZone) })));
  return section(t("now.right_now"), h("p", { id: "now-state", class: "facts" }, lines));
}

const ASKED = {
  START_APP_TASK: (p) => ({ english_learning: t("now.asked.play", { name: (p.params || {}).name || t("now.asked.a_lesson") }),
                           english_translation: t("now.start_translation"), chat: t("now.asked.chat") })[p.app_id] || p.app_id,
  SET_ALARM: () => t("now.asked.set_alarm"),
  UNSET_ALARM: () => t("now.asked.unset_alarm"),
};

function recentList(requests, timeZone) {
  if (!requests.length) return h("p", { class: "note" }, t("now.nothing_sent"));
  return h("ul", { class: "plain", id: "recent" }, requests.slice(0, 5).map((r) => {
    const said = describeAck(r.ack);
    const asked = ASKED[r.action] ? ASKED[r.action](r.payload || {}) : r.action;
    const sent = r.sent_at ? h("small", { class: "note" }, when(r.sent_at, timeZone) + " ") : null;
    return h("li", {}, sent, asked, ": ",
             h("span", { class: "status " + said.kind }, said.text));
  }));
}
