// Devices: every device, whether it is on (here or on another node), what
// it does and what it can do; approve the code a new device says aloud;
// rename and remove.

import { api, devicePath } from "../api.js";
import { h, section, statusLine, unavailable, field, describeError, ago, doing } from "../ui.js";
import { t } from "../i18n.js";
import { listDevices, remember, forget } from "../devices.js";

export async function render(root, ctx) {
  root.append(approveCard(ctx), await waitingCard(ctx));
  const { devices, full } = await listDevices();
  const list = section(t("devices.yours"));
  if (!full) list.append(h("p", { class: "note" }, t("devices.partial_list")), addById(ctx));
  if (!devices.length) list.append(h("p", { class: "note" }, t("devices.none")));
  for (const d of devices) list.append(deviceCard(d, full, ctx));
  root.append(list);
}

function approveCard(ctx) {
  const code = h("input", { id: "code", name: "code", inputmode: "numeric", pattern: "[0-9]{6}",
                            maxlength: "6", required: true, placeholder: "123456" });
  const status = statusLine("approve-status");
  const form = h("form", { id: "approve-form", onsubmit: async (e) => {
    e.preventDefault();
    await approve(code.value.trim(), status, ctx);
  } }, field(t("devices.code_label"), code), h("button", { type: "submit" }, t("devices.approve")), status);
  return section(t("devices.add_title"), h("p", {}, t("devices.add_explain")), form);
}

async function approve(code, status, ctx) {
  try {
    const { data } = await api.post("/api/activations/" + encodeURIComponent(code));
    remember(data.device_id);
    status.show(t("devices.approved", { id: data.device_id }), "ok");
    setTimeout(ctx.reload, 1500);
  } catch (e) {
    status.show(e.status === 404 ? t("devices.no_such_code", { code }) : describeError(e), "bad");
  }
}

async function waitingCard(ctx) {
  const card = section(t("devices.waiting_title"));
  let waiting;
  try {
    waiting = (await api.get("/api/activations")).data.waiting || [];
  } catch (e) {
    if (e.status === 401) throw e;
    card.append(e.unavailable ? unavailable(t("devices.waiting_list")) : h("p", { class: "status bad" },
                                                                           describeError(e)));
    return card;
  }
  if (!waiting.length) card.append(h("p", { class: "note" }, t("devices.none_waiting")));
  const list = h("ul", { class: "plain", id: "waiting" });
  for (const w of waiting) {
    const status = statusLine();
    list.append(h("li", {},
      h("div", {}, h("strong", {}, w.code), " ", t("devices.waiting_from", { id: w.device_id, when: ago(w.created_at) })),
      h("div", { class: "row" },
        h("button", { type: "button", onclick: () => approve(w.code, status, ctx) }, t("devices.approve")),
        h("button", { type: "button", class: "quiet", onclick: async () => {
          try { await api.del("/api/activations/" + encodeURIComponent(w.code)); ctx.reload(); }
          catch (e) { status.show(describeError(e), "bad"); }
        } }, t("devices.dismiss"))), status));
  }
  card.append(list);
  return card;
}

function addById(ctx) {
  const id = h("input", { id: "add-device-id", placeholder: "aa:bb:cc:dd:ee:ff", required: true });
  return h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); remember(id.value.trim()); ctx.reload(); } },
           field(t("devices.device_id"), id), h("button", { type: "submit", class: "quiet" }, t("devices.add")));
}

function onlineBadge(d) {
  if (d.online) return h("span", { class: "badge on" }, t("devices.online"));
  if (d.online_elsewhere) return h("span", { class: "badge on elsewhere" }, t("devices.online_elsewhere", { node: d.online_elsewhere }));
  return h("span", { class: "badge off" }, t("devices.offline"));
}

// Why the console greys out a control for this device (GET /api/devices `greyed`).
export function greyedReasons(d) {
  return Object.entries(d.greyed || {}).map(([control, why]) =>
    h("li", { "data-greyed": control }, t("greyed.control." + control) + ": " + t("greyed.why." + why)));
}

function deviceCard(d, full, ctx) {
  const status = statusLine();
  const facts = [
    onlineBadge(d),
    d.control === "voice_only" ? h("span", { class: "badge voice" }, t("devices.voice_only")) : null,
    h("span", {}, t("devices.doing", { what: doing(d.app, d.task, d.player) })),
    d.battery !== null && d.battery !== undefined ? h("span", {}, t("devices.battery", { n: d.battery })) : null,
    d.volume !== null && d.volume !== undefined ? h("span", {}, t("devices.volume", { n: d.volume })) : null,
    h("span", {}, t("devices.last_seen", { when: ago(d.last_seen, d.timezone) })),
  ];
  const reasons = greyedReasons(d);
  const card = h("article", { class: "card device", "data-device": d.device_id },
    h("h3", {}, d.name || d.device_id), d.name ? h("small", { class: "note" }, d.device_id) : null,
    h("div", { class: "facts" }, facts),
    reasons.length ? h("ul", { class: "plain note greyed" }, reasons) : null,
    d.error ? h("p", { class: "status bad" }, d.error) : null);
  if (full) {
    const name = h("input", { name: "name", value: d.name || "", placeholder: t("devices.name_example"), maxlength: "64" });
    card.append(h("form", { class: "row", onsubmit: async (e) => {
      e.preventDefault();
      try { await api.patch(devicePath(d.device_id), { name: name.value.trim() }); ctx.reload(); }
      catch (err) { status.show(describeError(err), "bad"); }
    } }, field(t("devices.name"), name), h("button", { type: "submit", class: "quiet" }, t("devices.rename"))));
  }
  card.append(h("div", { class: "row" }, h("button", { type: "button", class: "danger", onclick: async () => {
    if (!confirm(t("devices.remove_confirm", { name: d.name || d.device_id }))) return;
    try {
      if (full) await api.del(devicePath(d.device_id));
      forget(d.device_id);
      ctx.reload();
    } catch (err) { status.show(describeError(err), "bad"); }
  } }, full ? t("devices.remove") : t("devices.remove_here"))), status);
  return card;
}
