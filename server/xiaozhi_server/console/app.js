// The console's shell: login, the page menu, the device picker, and which
// page shows (the part after # in the address: #devices, #now, ...).

import { api } from "./api.js";
import { h, describeError, statusLine } from "./ui.js";
import { listDevices, selected, select, label } from "./devices.js";
import * as devicesPage from "./pages/devices.js";
import * as nowPage from "./pages/now.js";
import * as schedulesPage from "./pages/schedules.js";
import * as limitsPage from "./pages/limits.js";
import * as activityPage from "./pages/activity.js";
import * as memoryPage from "./pages/memory.js";

const PAGES = [
  { id: "devices", title: "Devices", page: devicesPage, perDevice: false },
  { id: "now", title: "Now", page: nowPage, perDevice: true },
  { id: "schedules", title: "Schedules", page: schedulesPage, perDevice: true },
  { id: "limits", title: "Limits", page: limitsPage, perDevice: true },
  { id: "activity", title: "What the child did", page: activityPage, perDevice: true },
  { id: "memory", title: "Memory", page: memoryPage, perDevice: true },
];

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const loginForm = document.getElementById("login");
const loginStatus = document.getElementById("login-status");
const logoutButton = document.getElementById("logout");

function currentPage() {
  const id = location.hash.replace(/^#/, "") || "devices";
  return PAGES.find((p) => p.id === id) || PAGES[0];
}

function showLogin(message) {
  document.body.dataset.view = "login";
  loginStatus.textContent = message || "";
  document.getElementById("token").focus();
}

async function render() {
  const entry = currentPage();
  document.body.dataset.view = "app";
  for (const a of nav.querySelectorAll("a")) {
    a.setAttribute("aria-current", a.dataset.page === entry.id ? "page" : "false");
  }
  const here = h("div", { id: "page-" + entry.id, class: "page" });
  main.replaceChildren(here);
  const ctx = { reload: render, loggedOut: () => showLogin("You are logged out. Type the token again.") };
  try {
    if (entry.perDevice) {
      const { devices } = await listDevices();
      if (!devices.length) {
        here.append(h("p", { class: "note" }, "No device yet. Approve one on the ",
                      h("a", { href: "#devices" }, "Devices"), " page first."));
        return;
      }
      let deviceId = selected();
      if (!devices.some((d) => d.device_id === deviceId)) {
        deviceId = devices[0].device_id;
        select(deviceId);
      }
      const picker = h("select", { id: "device-picker", onchange: () => { select(picker.value); render(); } },
                       devices.map((d) => h("option", { value: d.device_id, selected: d.device_id === deviceId },
                                            label(d))));
      here.append(h("label", { class: "picker" }, h("span", {}, "Device"), picker));
      ctx.device = devices.find((d) => d.device_id === deviceId);
    }
    here.append(h("h1", {}, entry.title));
    await entry.page.render(here, ctx);
    here.dataset.ready = "1";
  } catch (e) {
    if (e.status === 401) return showLogin("You are logged out. Type the token again.");
    const line = statusLine("page-error");
    line.show(describeError(e), "bad");
    here.append(line);
    here.dataset.ready = "1";
  }
}

loginForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = document.getElementById("token");
  loginStatus.textContent = "Checking…";
  try {
    await api.post("/api/session", { token: input.value });
    input.value = "";
    loginStatus.textContent = "";
    await render();
  } catch (e) {
    input.select();
    loginStatus.textContent = e.status === 401 ? "That is not the right token. Try again." : describeError(e);
  }
});

logoutButton.addEventListener("click", async () => {
  try {
    await api.del("/api/session");
  } finally {
    showLogin("You are logged out.");
  }
});

for (const entry of PAGES) {
  nav.append(h("a", { href: "#" + entry.id, "data-page": entry.id }, entry.title));
}
window.addEventListener("hashchange", () => {
  if (document.body.dataset.view === "app") render();
});

(async () => {
  try {
    await api.get("/api/session");
    await render();
  } catch (e) {
    showLogin(e.status === 401 ? "" : describeError(e));
  }
})();
