// The console's words, one message table per language (messages/zh.json,
// messages/en.json: the same keys in both; a test checks it). Chinese when
// the browser prefers it, else English; the switch in the header is kept
// in localStorage. Times are shown in the device's own zone.
//
//   await loadMessages();          // once, before anything is drawn
//   t("devices.online")            // the word in the current language
//   t("devices.approved", { id })  // {id} replaced
//   when(epochSeconds, "Asia/Shanghai")   // a date and time in that zone

const KEY = "xz.lang";
export const LANGS = ["zh", "en"];
let table = {};
export let lang = "en";

export function preferred() {
  const chosen = localStorage.getItem(KEY);
  if (LANGS.includes(chosen)) return chosen;
  for (const l of navigator.languages || [navigator.language || ""]) {
    const base = String(l).toLowerCase().split("-")[0];
    if (LANGS.includes(base)) return base;
  }
  return "en";
}

export async function loadMessages(which = preferred()) {
  const r = await fetch("messages/" + which + ".json", { cache: "no-cache" });
  table = await r.json();
  lang = which;
  document.documentElement.lang = which === "zh" ? "zh-CN" : "en";
  for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  document.title = t("app.title");
}

export function choose(which) {
  localStorage.setItem(KEY, which);
}

export function t(key, vars = {}) {
  const text = table[key];
  if (text === undefined) return key;    // visible, so a missing key is noticed
  return text.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
}

// A moment as the device's family lives it: its zone, the page's language.
export function when(epochSeconds, timeZone) {
  if (!epochSeconds) return t("time.never");
  const opts = { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit" };
  try {
    return new Intl.DateTimeFormat(lang === "zh" ? "zh-CN" : "en-GB", { ...opts, timeZone: timeZone || undefined })
      .format(new Date(epochSeconds * 1000));
  } catch (e) {   // an unknown zone: the browser's own
    return new Intl.DateTimeFormat(lang === "zh" ? "zh-CN" : "en-GB", opts).format(new Date(epochSeconds * 1000));
  }
}
