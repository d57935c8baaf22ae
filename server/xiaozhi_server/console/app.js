// The console's shell: login, the page menu, the device picker, and which
// page shows (the part after # in the address: #devices, #now, ...).

import { api } from "./api.js";
import { h, describeError, statusLine } from "./ui.js";
import { LANGS, choose, lang, loadMessages, t } from "./i18n.js";
import { listDevices, selected, select, label } from "./devices.js";
import * as devicesPage from "./pages/devices.js";
import * as nowPage from "./pages/now.js";
import * as schedulesPage from "./pages/schedules.js";
import * as limitsPage from "./pages/limits.js";
import * as activityPage from "./pages/activity.js";
import * as memoryPage from "./pages/memory.js";

const PAGES = [
  { id: "devices", page: devicesPage, perDevice: false },
  { id: "now", page: nowPage, perDevice: true },
  { id: "schedules", page: schedulesPage, perDevice: true },
  { id: "limits", page: limitsPage, perDevice: true },
  { id: "activity", page: activityPage, perDevice: true },
  { id: "memory", page: memoryPage, perDevice: true },
];
const title = (entry) => t("page." + entry.id);

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
  const ctx = { reload: render, loggedOut: () => showLogin(t("login.logged_out")) };
  try {
    if (entry.perDevice) {
      const { devices } = await listDevices();
      if (!devices.length) {
        here.append(h("p", { class: "note" }, t("app.no_device_before"),
                      h("a", { href: "#devices" }, t("page.devices")), t("app.no_device_after")));
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
      here.append(h("label", { class: "picker" }, h("span", {}, t("app.device")), picker));
      ctx.device = devices.find((d) => d.device_id === deviceId);
      ctx.timezone = ctx.device.timezone;     // dates and times in the device's zone
    }
    here.append(h("h1", {}, title(entry)));
    await entry.page.render(here, ctx);
    here.dataset.ready = "1";
  } catch (e) {
    if (e.status === 401) return showLogin(t("login.logged_out"));
    const line = statusLine("page-error");
    line.show(describeError(e), "bad");
    here.append(line);
    here.dataset.ready = "1";
  }
}

loginForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = document.getElementById("token");
  loginStatus.textContent = t("login.checking");
  try {
    await api.post("/api/session", { token: input.value });
    input.value = "";
    loginStatus.textContent = "";
    await render();
  } catch (e) {
    input.select();
    loginStatus.textContent = e.status === 401 ? t("login.wrong_token") : describeError(e);
  }
});

logoutButton.addEventListener("click", async () => {
  try {
    await api.del("/api/session");
  } finally {
    showLogin(t("login.logged_out_plain"));
  }
});

function drawNav() {
  nav.replaceChildren(...PAGES.map((entry) => h("a", { href: "#" + entry.id, "data-page": entry.id }, title(entry))));
}

// The language switch, on every page (the login too): the other language, in its own words.
const langSwitch = document.getElementById("lang-switch");
langSwitch.addEventListener("click", async () => {
  const other = LANGS.find((l) => l !== lang);
  choose(other);
  await loadMessages(other);
  drawNav();
  if (document.body.dataset.view === "app") await render();
});

window.addEventListener("hashchange", () => {
  if (document.body.dataset.view === "app") render();
});

(async () => {
  await loadMessages();
  drawNav();
  try {
    await api.get("/api/session");
    await render();
  } catch (e) {
    showLogin(e.status === 401 ? "" : describeError(e));
  }
})();
