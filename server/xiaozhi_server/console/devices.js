// Which devices the console knows, and which one the parent is looking at.
// The server's list (GET /api/devices) when it has one; else the devices
// this browser approved or was told about, kept in localStorage, each read
// with GET /api/devices/{id} (a smaller server has only that route).

import { api, devicePath } from "./api.js";

const KNOWN = "xz.devices";
const SELECTED = "xz.device";

function known() {
  try {
    const list = JSON.parse(localStorage.getItem(KNOWN) || "[]");
    return Array.isArray(list) ? list.filter((x) => typeof x === "string") : [];
  } catch (e) {
    return [];
  }
}

export function remember(deviceId) {
  const list = known();
  if (!list.includes(deviceId)) localStorage.setItem(KNOWN, JSON.stringify([...list, deviceId]));
}

export function forget(deviceId) {
  localStorage.setItem(KNOWN, JSON.stringify(known().filter((x) => x !== deviceId)));
  if (selected() === deviceId) localStorage.removeItem(SELECTED);
}

export function selected() {
  return localStorage.getItem(SELECTED);
}

export function select(deviceId) {
  localStorage.setItem(SELECTED, deviceId);
}

// A row like the server list's, made from GET /api/devices/{id}.
function fromDetail(d) {
  const report = d.state ? d.state.report || {} : {};
  const state = report.state;
  return {
    device_id: d.device_id,
    name: null,
    online: Boolean(state) && state !== "offline" && state !== "unknown",
    app: report.active_app_id || null,
    task: report.active_task_id || null,
    battery: typeof report.battery === "number" ? report.battery : null,
    volume: typeof report.volume === "number" ? report.volume : null,
    last_seen: d.state ? d.state.received_at : null,
    player: report.player || null,
  };
}

// {devices: [...], full: true when the server listed them itself}
export async function listDevices() {
  try {
    const { data } = await api.get("/api/devices");
    return { devices: data.devices || [], full: true };
  } catch (e) {
    if (!e.unavailable) throw e;
  }
  const devices = [];
  for (const id of known()) {
    try {
      devices.push(fromDetail((await api.get(devicePath(id))).data));
    } catch (e) {
      if (e.status === 401) throw e;
      devices.push({ device_id: id, name: null, online: false, error: e.message });
    }
  }
  return { devices, full: false };
}

export function label(device) {
  return device.name ? device.name + " (" + device.device_id + ")" : device.device_id;
}
