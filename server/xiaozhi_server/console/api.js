// The server's public API, as the console calls it. Same origin, the
// session cookie rides along; every call carries the console's header
// (the server refuses a cookie write without it: a page on another site
// cannot set it). Errors become ApiError; `unavailable` marks a route this
// server does not have (an older or smaller server), so a page can say so
// instead of breaking.

export class ApiError extends Error {
  constructor(status, code, message, body) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body;
  }
  get unavailable() {
    return this.code === "no_route";
  }
}

async function call(method, path, body, headers = {}) {
  const init = {
    method,
    credentials: "same-origin",
    headers: { "X-Xiaozhi-Console": "1", ...headers },
  };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, "network", "The server cannot be reached. Check the connection and try again.");
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (e) {
    data = null;
  }
  if (response.ok) {
    return { status: response.status, data, etag: response.headers.get("ETag") };
  }
  const err = data && typeof data.error === "object" ? data.error : null;
  if (!err && (response.status === 404 || response.status === 405)) {
    // aiohttp's own answer: no such route on this server at all.
    throw new ApiError(response.status, "no_route", "This is not available on this server.", data);
  }
  throw new ApiError(response.status, err ? err.code : "http_" + response.status,
                     err ? err.message : "The server answered " + response.status + ".", data);
}

export const api = {
  get: (path) => call("GET", path),
  post: (path, body) => call("POST", path, body === undefined ? {} : body),
  put: (path, body, headers) => call("PUT", path, body, headers),
  patch: (path, body) => call("PATCH", path, body),
  del: (path, headers) => call("DELETE", path, undefined, headers),
};

export function devicePath(deviceId, rest = "") {
  return "/api/devices/" + encodeURIComponent(deviceId) + rest;
}
