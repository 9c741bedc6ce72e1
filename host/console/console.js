// The console's only script: keeps the tab's token, fetches each view's
// HTML (rendered on the server) with a bearer header, and sends the forms
// and buttons the fragments carry. No framework, no cookies.
"use strict";

const TOKEN = "nomos-console-token";
const $ = (id) => document.getElementById(id);

function token() {
  return sessionStorage.getItem(TOKEN);
}

class Refused extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// A request with the tab's token; the answer's text, or a Refused naming
// the status and the API's error message.
async function call(method, url, body, type) {
  const headers = {};
  if (token()) headers["Authorization"] = "Bearer " + token();
  if (type) headers["Content-Type"] = type;
  const response = await fetch(url, { method, headers, body, cache: "no-store" });
  const text = await response.text();
  if (!response.ok) {
    let message = text;
    try {
      const parsed = JSON.parse(text);
      message = parsed.error + (parsed.reasons ? ": " + parsed.reasons.join("; ") : "");
    } catch (_) { /* not JSON: the text as it is */ }
    throw new Refused(response.status, response.status + " " + message);
  }
  return text;
}

// "#/session/ID?links=…" → the fragment's URL.
function fragmentUrl(hash) {
  const route = hash.replace(/^#\/?/, "") || "sessions";
  const [path, query] = route.split("?");
  const parts = path.split("/");
  const search = query ? "?" + query : "";
  switch (parts[0]) {
    case "session": return "/ui/fragments/sessions/" + encodeURIComponent(parts[1] || "") + search;
    case "policy": return "/ui/fragments/policy" + search;
    case "playground": return "/ui/fragments/playground" + search;
    default: return "/ui/fragments/sessions" + search;
  }
}

function showError(message) {
  const error = $("error");
  error.textContent = message;
  error.hidden = !message;
}

function showLogin(message) {
  $("nav").hidden = true;
  $("view").innerHTML = "";
  $("login").hidden = false;
  $("login-error").textContent = message || "";
  $("token").focus();
}

async function show() {
  if (token() === null) return showLogin();
  $("login").hidden = true;
  $("nav").hidden = false;
  const current = (location.hash.replace(/^#\/?/, "").split(/[/?]/)[0]) || "sessions";
  for (const link of document.querySelectorAll("[data-nav]")) {
    link.classList.toggle("current", link.dataset.nav === (current === "session" ? "sessions" : current));
  }
  try {
    $("view").innerHTML = await call("GET", fragmentUrl(location.hash));
    showError("");
  } catch (e) {
    if (e.status === 401) {
      sessionStorage.removeItem(TOKEN);
      return showLogin("The server refused this token.");
    }
    showError(e.message);
  }
}

function formJson(form) {
  return JSON.stringify(Object.fromEntries(new FormData(form)));
}

function query(form) {
  const fields = new URLSearchParams();
  for (const [name, value] of new FormData(form)) if (value !== "") fields.set(name, value);
  return fields.toString();
}

async function into(target, work) {
  const place = $(target);
  place.classList.remove("bad");
  place.textContent = "working…";
  try {
    place.innerHTML = await work();
    return place;
  } catch (e) {
    place.classList.add("bad");
    place.textContent = e.message;
    return null;
  }
}

document.addEventListener("submit", async (event) => {
  const form = event.target;
  event.preventDefault();
  if (form.id === "login") {
    sessionStorage.setItem(TOKEN, $("token").value.trim());
    $("token").value = "";
    if (!location.hash) location.hash = "#/sessions";
    return show();
  }
  if (form.dataset.get) {
    const fields = query(form);
    location.hash = form.dataset.get + (fields ? "?" + fields : "");
  } else if (form.dataset.post) {
    await into(form.dataset.target, () => call("POST", form.dataset.post, formJson(form), "application/json"));
  } else if (form.dataset.upload) {
    const file = form.querySelector("input[type=file]").files[0];
    if (!file) return;
    // Asked first, so a token without the right is refused before megabytes are sent.
    const place = await into(form.dataset.target, async () => {
      await call("GET", form.dataset.upload);
      return call("PUT", form.dataset.upload, file, "application/wasm");
    });
    const held = place && place.querySelector("[data-candidate]");
    if (held) {
      const select = $("candidate-select");
      const option = new Option(held.textContent, held.dataset.candidate, true, true);
      select.add(option, 1);
    }
  }
});

document.addEventListener("change", (event) => {
  const select = event.target;
  if (select.dataset && select.dataset.autosubmit) select.form.requestSubmit();
});

document.addEventListener("click", async (event) => {
  const button = event.target.closest && event.target.closest("button[data-api]");
  if (button) {
    if (button.dataset.confirm && !confirm(button.dataset.confirm)) return;
    const done = await into("action-result", async () => {
      await call(button.dataset.method, button.dataset.api);
      return "";
    });
    if (done) return show();
    return;
  }
  if (event.target.id === "logout") {
    sessionStorage.removeItem(TOKEN);
    showLogin();
  }
});

window.addEventListener("hashchange", show);
document.addEventListener("DOMContentLoaded", show);
