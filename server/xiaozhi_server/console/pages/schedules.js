// Schedules: lessons (or translation, chat) that start by themselves, once
// or on chosen weekdays. The server keeps them and sets each as an alarm
// on the device; the device's clock and time zone decide when it rings.

import { api, devicePath } from "../api.js";
import { h, section, statusLine, field, describeError, describeAck } from "../ui.js";
import { lessonPicker } from "./lessons.js";
import { t, when as at } from "../i18n.js";

const DAYS = () => t("sched.days").split(",");   // 1 = Monday ... 7 = Sunday
const WAIT_S = 10;
// A schedule names its task (the API does not fill in the app's default
// here, as it does for a start now): each app's default task (data/apps.json).
const DEFAULT_TASK = { english_learning: "repeater", english_translation: "live_translate", chat: "conversation" };

export async function render(root, ctx) {
  const deviceId = ctx.device.device_id;
  root.append(await clockCard(deviceId), offCard());
  const list = (await api.get(devicePath(deviceId, "/schedules"))).data.schedules || [];
  const editor = h("div", { id: "schedule-editor" });
  const table = section(t("sched.planned"), list.length ? scheduleTable(list, deviceId, editor, ctx)
                                               : h("p", { class: "note", id: "no-schedules" }, t("sched.nothing")));
  root.append(table, editor);
  await showEditor(editor, deviceId, null, ctx);
}

async function clockCard(deviceId) {
  let zone = t("sched.own_clock");
  try {
    const { data } = await api.get(devicePath(deviceId, "/limits"));
    if (data.timezone) zone = data.timezone;
  } catch (e) {
    if (e.status === 401) throw e;
  }
  return h("p", { class: "note", id: "device-timezone" },
           t("sched.zone_before"), h("strong", {}, zone), t("sched.zone_after"));
}

function offCard() {
  return section(t("sched.off_title"),
    h("ul", {}, h("li", {}, t("sched.off_asleep")), h("li", {}, t("sched.off_unplugged"))));
}

function when(s, timeZone) {
  if (s.at) return t("sched.once", { when: at(s.at, timeZone) });
  const days = s.days && s.days.length && s.days.length < 7 ? s.days.map((d) => DAYS()[d - 1]).join(", ")
    : t("sched.every_day");
  return t("sched.days_at", { days, time: s.time });
}

function what(task) {
  if (task.app_id === "english_learning") {
    const p = task.params || {};
    return t("sched.lesson", { name: p.name }) + (p.repeat > 1 ? " × " + p.repeat : "") +
      (p.power_off_after ? t("sched.then_off") : "");
  }
  return task.app_id === "english_translation" ? t("sched.translation") : t("sched.chat");
}

function stateWords(s) {
  if (s.state === "active") return t("sched.state.active");
  if (s.state === "pending_ack") return t("sched.state.pending_ack");
  if (s.state === "failed") return describeAck(s.last_ack).text;
  return s.state;
}

function scheduleTable(list, deviceId, editor, ctx) {
  const status = statusLine("schedules-status");
  const rows = list.map((s) => h("tr", { "data-alarm": s.alarm_id },
    h("td", {}, when(s, ctx.timezone)), h("td", {}, what(s.pending_task)),
    h("td", {}, stateWords(s), s.missed ? h("div", { class: "status bad" },
      t("sched.missed", { when: at(s.missed.at, ctx.timezone) })) : null),
    h("td", {}, h("div", { class: "row" },
      h("button", { type: "button", class: "quiet", onclick: () => showEditor(editor, deviceId, s, ctx) }, t("sched.edit")),
      h("button", { type: "button", class: "danger", onclick: async () => {
        if (!confirm(t("sched.delete_confirm"))) return;
        try {
          await api.del(devicePath(deviceId, "/schedules/" + encodeURIComponent(s.alarm_id) + "?wait=" + WAIT_S),
                        { "If-Match": '"' + s.revision + '"' });
          ctx.reload();
        } catch (e) {
          status.show(e.status === 412 ? t("sched.changed") : describeError(e), "bad");
        }
      } }, t("sched.delete"))))));
  return h("div", {}, h("table", { id: "schedules" },
    h("thead", {}, h("tr", {}, h("th", {}, t("sched.when")), h("th", {}, t("sched.what")), h("th", {}, t("sched.state")),
                    h("th", {}, ""))),
    h("tbody", {}, rows)), status);
}

function localInput(epoch) {
  const d = new Date(epoch * 1000 - new Date().getTimezoneOffset() * 60000);
  return d.toISOString().slice(0, 16);
}

async function showEditor(editor, deviceId, s, ctx) {
  const editing = Boolean(s);
  const task = editing ? s.pending_task : { app_id: "english_learning", params: {} };
  const once = h("input", { type: "radio", name: "kind", id: "kind-once", value: "once", checked: editing && s.at });
  const repeat = h("input", { type: "radio", name: "kind", id: "kind-repeat", value: "repeat",
                              checked: !editing || !s.at });
  const atInput = h("input", { type: "datetime-local", id: "sched-at", value: editing && s.at ? localInput(s.at) : "" });
  const time = h("input", { type: "time", id: "sched-time", value: editing && s.time ? s.time : "07:30" });
  const dayBoxes = DAYS().map((name, i) => h("input", { type: "checkbox", value: String(i + 1), id: "day-" + (i + 1),
    checked: !editing || !s.days || s.days.includes(i + 1) }));
  const app = h("select", { id: "sched-app" },
    h("option", { value: "english_learning", selected: task.app_id === "english_learning" }, t("sched.a_lesson")),
    h("option", { value: "english_translation", selected: task.app_id === "english_translation" }, t("sched.translation")),
    h("option", { value: "chat", selected: task.app_id === "chat" }, t("sched.chat")));
  const lesson = await lessonPicker(deviceId, "sched", task.params && task.params.name,
                                    (ctx.device.greyed || {}).lessons);
  const times = h("input", { type: "number", id: "sched-repeat", min: "1", max: "100",
                             value: (task.params && task.params.repeat) || 1 });
  const powerOff = h("input", { type: "checkbox", id: "sched-power-off", checked: task.params && task.params.power_off_after });
  const status = statusLine("schedule-status");
  const onceFields = h("div", {}, field(t("sched.date_time"), atInput));
  const repeatFields = h("div", {}, field(t("sched.time"), time), h("div", { class: "days" },
    dayBoxes.map((box, i) => h("label", { class: "check" }, box, DAYS()[i]))));
  const lessonFields = h("div", {}, lesson.el, field(t("now.times"), times),
    h("label", { class: "check" }, powerOff, t("now.power_off")));
  const sync = () => {
    onceFields.hidden = !once.checked;
    repeatFields.hidden = once.checked;
    lessonFields.hidden = app.value !== "english_learning";
  };
  for (const el of [once, repeat, app]) el.addEventListener("change", sync);
  sync();

  const save = async (e) => {
    e.preventDefault();
    const body = { pending_task: { app_id: app.value, task_id: DEFAULT_TASK[app.value] } };
    if (app.value === "english_learning") {
      body.pending_task.params = { name: lesson.value(), repeat: Number(times.value) || 1 };
      if (powerOff.checked) body.pending_task.params.power_off_after = true;
    }
    if (once.checked) {
      if (!atInput.value) return status.show(t("sched.choose_date"), "bad");
      body.at = Math.round(new Date(atInput.value).getTime() / 1000);
    } else {
      const days = dayBoxes.filter((b) => b.checked).map((b) => Number(b.value));
      if (!days.length) return status.show(t("sched.choose_day"), "bad");
      body.time = time.value;
      if (days.length < 7) body.days = days;
    }
    status.show(t("sched.saving"));
    try {
      const path = devicePath(deviceId, "/schedules" + (editing ? "/" + encodeURIComponent(s.alarm_id) : "") +
                              "?wait=" + WAIT_S);
      const saved = editing ? await api.put(path, body, { "If-Match": '"' + s.revision + '"' })
                            : await api.post(path, body);
      const words = saved.data.state === "active" ? t("sched.saved_set") :
        saved.data.state === "failed" ? t("sched.saved_but", { why: describeAck(saved.data.last_ack).text }) :
        t("sched.saved_pending");
      status.show(words, saved.data.state === "failed" ? "bad" : "ok");
      setTimeout(ctx.reload, 1200);
    } catch (err) {
      status.show(err.status === 412 ? t("sched.changed") : describeError(err), "bad");
    }
  };
  editor.replaceChildren(section(editing ? t("sched.change_title") : t("sched.new_title"),
    h("form", { id: "schedule-form", onsubmit: save },
      h("div", { class: "row" }, h("label", { class: "check" }, repeat, t("sched.repeats")),
        h("label", { class: "check" }, once, t("sched.once_kind"))),
      repeatFields, onceFields, field(t("sched.what"), app), lessonFields,
      h("div", { class: "row" }, h("button", { type: "submit", id: "save-schedule" },
                                   editing ? t("sched.save_changes") : t("devices.add")),
        editing ? h("button", { type: "button", class: "quiet", onclick: () => showEditor(editor, deviceId, null, ctx) },
                    t("sched.cancel")) : null),
      status)));
}
