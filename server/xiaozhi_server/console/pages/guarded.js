// A card whose route may be missing on this server: it shows "not
// available" (or the error) in place of its form instead of breaking the page.

import { api } from "../api.js";
import { h, section, unavailable, describeError } from "../ui.js";

export async function guardedCard(title, path, what, build) {
  let data;
  try {
    data = (await api.get(path)).data;
  } catch (e) {
    if (e.status === 401) throw e;
    return section(title, e.unavailable ? unavailable(what) : h("p", { class: "status bad" }, describeError(e)));
  }
  return section(title, ...[].concat(await build(data)));
}
