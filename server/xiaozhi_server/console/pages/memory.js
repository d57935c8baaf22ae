// Memory: the short profile the companion keeps about the child across
// days (name, age, interests, what was learnt). Shown, editable, erasable;
// with the switch off the companion keeps nothing new.

import { api, devicePath } from "../api.js";
import { h, statusLine, field, describeError } from "../ui.js";
import { guardedCard } from "./guarded.js";
import { t } from "../i18n.js";

export async function render(root, ctx) {
  const deviceId = ctx.device.device_id;
  root.append(await guardedCard(t("memory.title"), devicePath(deviceId, "/memory"), t("page.memory"),
                                (data) => memoryForm(deviceId, data, ctx)));
}

function lines(list) {
  return (list || []).join("\n");
}

function memoryForm(deviceId, data, ctx) {
  const p = data.profile || {};
  const on = h("input", { type: "checkbox", id: "memory-on", checked: data.enabled });
  const name = h("input", { id: "memory-name", value: p.name || "" });
  const age = h("input", { id: "memory-age", type: "number", min: "1", max: "18", value: p.age || "" });
  const interests = h("textarea", { id: "memory-interests" });
  interests.value = lines(p.interests);
  const learnt = h("textarea", { id: "memory-learnt" });
  learnt.value = lines(p.learnt);
  const notes = h("textarea", { id: "memory-notes" });
  notes.value = p.notes || "";
  const status = statusLine("memory-status");
  const split = (el) => el.value.split("\n").map((x) => x.trim()).filter(Boolean);
  return h("form", { id: "memory-form", onsubmit: async (e) => {
    e.preventDefault();
    // With memory off the server keeps no profile: the switch alone is sent.
    const body = on.checked ? { enabled: true, profile: { name: name.value.trim(),
      age: age.value ? Number(age.value) : null, interests: split(interests), learnt: split(learnt),
      notes: notes.value.trim() } } : { enabled: false };
    try {
      await api.put(devicePath(deviceId, "/memory"), body);
      status.show(t("common.saved"), "ok");
    } catch (err) {
      status.show(describeError(err), "bad");
    }
  } },
    h("label", { class: "check" }, on, t("memory.switch")),
    h("p", { class: "note", id: "memory-rules" }, t("memory.rules")),
    field(t("memory.name"), name), field(t("memory.age"), age), field(t("memory.likes"), interests, t("memory.one_per_line")),
    field(t("memory.learnt"), learnt, t("memory.one_per_line")), field(t("memory.notes"), notes),
    h("div", { class: "row" }, h("button", { type: "submit", id: "save-memory" }, t("common.save")),
      h("button", { type: "button", class: "danger", id: "erase-memory", onclick: async () => {
        if (!confirm(t("memory.erase_confirm"))) return;
        try {
          await api.del(devicePath(deviceId, "/memory"));
          ctx.reload();
        } catch (err) {
          status.show(describeError(err), "bad");
        }
      } }, t("memory.erase"))), status);
}
