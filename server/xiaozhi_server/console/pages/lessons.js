// The lesson picker the Now and Schedules pages share: the card's real
// list (GET .../lessons, asked of the device), else a name to type.

import { api, devicePath } from "../api.js";
import { h, field, describeError } from "../ui.js";
import { t } from "../i18n.js";

// greyed: the device list's reason the card cannot be read (offline,
// online_elsewhere, no_card), said when the device cannot answer.
export async function lessonPicker(deviceId, idPrefix, current, greyed) {
  let lessons = null;
  let why = "";
  try {
    lessons = (await api.get(devicePath(deviceId, "/lessons"))).data.lessons || [];
  } catch (e) {
    if (e.status === 401) throw e;
    why = e.unavailable ? t("lessons.unavailable")
      : e.status === 503 ? t("greyed.why." + (greyed || "offline")) : describeError(e);
  }
  const names = (lessons || []).map((l) => (typeof l === "string" ? l : l.name)).filter(Boolean);
  if (current && !names.includes(current) && lessons) names.unshift(current);
  if (names.length) {
    const select = h("select", { id: idPrefix + "-lesson", name: "lesson" },
                     names.map((n) => h("option", { value: n, selected: n === current }, n)));
    return { el: field(t("lessons.lesson"), select), value: () => select.value };
  }
  const input = h("input", { id: idPrefix + "-lesson", name: "lesson", value: current || "",
                             placeholder: "lesson1.mp3", required: true });
  const hint = lessons ? t("lessons.empty_card") : why + " " + t("lessons.type_name");
  return { el: field(t("lessons.file"), input, hint), value: () => input.value.trim() };
}
