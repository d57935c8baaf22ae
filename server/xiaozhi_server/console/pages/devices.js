// Devices: every device, whether it is on, what it does; approve the code
// a new device says aloud; rename and remove.

import { api, devicePath } from "../api.js";
import { h, section, statusLine, unavailable, field, describeError, ago, doing } from "../ui.js";
import { listDevices, remember, forget } from "../devices.js";

export async function render(root, ctx) {
  root.append(approveCard(ctx), await waitingCard(ctx));
  const { devices, full } = await listDevices();
  const list = section("Your devices");
  if (!full) {
    list.append(h("p", { class: "note" },
      "The full device list is not available on this server: shown here are the devices approved from " +
      "this browser, and any you add by id."), addById(ctx));
  }
  if (!devices.length) list.append(h("p", { class: "note" }, "No device yet. When a new device says a " +
                                     "six-digit code, type it above."));
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
  } }, field("Code the device says", code), h("button", { type: "submit" }, "Approve"), status);
  return section("Add a new device", h("p", {}, "A new device says a six-digit code aloud. Type it here " +
                 "to let it connect."), form);
}

async function approve(code, status, ctx) {
  try {
    const { data } = await api.post("/api/activations/" + encodeURIComponent(code));
    remember(data.device_id);
    status.show("Approved: device " + data.device_id + " can connect now.", "ok");
    setTimeout(ctx.reload, 1500);
  } catch (e) {
    status.show(e.status === 404 ? "No device is waiting with code " + code +
                " (it may have expired: ask the device again)." : describeError(e), "bad");
  }
}

async function waitingCard(ctx) {
  const card = section("Devices waiting for approval");
  let waiting;
  try {
    waiting = (await api.get("/api/activations")).data.waiting || [];
  } catch (e) {
    if (e.status === 401) throw e;
    card.append(e.unavailable ? unavailable("The list of waiting codes") : h("p", { class: "status bad" },
                                                                             describeError(e)));
    return card;
  }
  if (!waiting.length) card.append(h("p", { class: "note" }, "No device is waiting."));
  const list = h("ul", { class: "plain", id: "waiting" });
  for (const w of waiting) {
    const status = statusLine();
    list.append(h("li", {},
      h("div", {}, h("strong", {}, w.code), " from device ", w.device_id, ", asked ", ago(w.since)),
      h("div", { class: "row" },
        h("button", { type: "button", onclick: () => approve(w.code, status, ctx) }, "Approve"),
        h("button", { type: "button", class: "quiet", onclick: async () => {
          try { await api.del("/api/activations/" + encodeURIComponent(w.code)); ctx.reload(); }
          catch (e) { status.show(describeError(e), "bad"); }
        } }, "Dismiss")), status));
  }
  card.append(list);
  return card;
}

function addById(ctx) {
  const id = h("input", { id: "add-device-id", placeholder: "aa:bb:cc:dd:ee:ff", required: true });
  return h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); remember(id.value.trim()); ctx.reload(); } },
           field("Device id", id), h("button", { type: "submit", class: "quiet" }, "Add"));
}

function deviceCard(d, full, ctx) {
  const status = statusLine();
  const facts = [
    h("span", { class: "badge " + (d.online ? "on" : "off") }, d.online ? "Online" : "Offline"),
    h("span", {}, "Doing: " + doing(d.app, d.task, d.player)),
    d.battery !== null && d.battery !== undefined ? h("span", {}, "Battery " + d.battery + "%") : null,
    d.volume !== null && d.volume !== undefined ? h("span", {}, "Volume " + d.volume + "%") : null,
    h("span", {}, "Last seen " + ago(d.last_seen)),
  ];
  const card = h("article", { class: "card device", "data-device": d.device_id },
    h("h3", {}, d.name || d.device_id), d.name ? h("small", { class: "note" }, d.device_id) : null,
    h("div", { class: "facts" }, facts), d.error ? h("p", { class: "status bad" }, d.error) : null);
  if (full) {
    const name = h("input", { name: "name", value: d.name || "", placeholder: "e.g. Mia's bear", maxlength: "64" });
    card.append(h("form", { class: "row", onsubmit: async (e) => {
      e.preventDefault();
      try { await api.patch(devicePath(d.device_id), { name: name.value.trim() }); ctx.reload(); }
      catch (err) { status.show(describeError(err), "bad"); }
    } }, field("Name", name), h("button", { type: "submit", class: "quiet" }, "Rename")));
  }
  card.append(h("div", { class: "row" }, h("button", { type: "button", class: "danger", onclick: async () => {
    if (!confirm("Remove " + (d.name || d.device_id) + "? It forgets its schedules, limits and history, " +
                 "and the device must be approved again.")) return;
    try {
      if (full) await api.del(devicePath(d.device_id));
      forget(d.device_id);
      ctx.reload();
    } catch (err) { status.show(describeError(err), "bad"); }
  } }, full ? "Remove" : "Remove from this list")), status);
  return card;
}
