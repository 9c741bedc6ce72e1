// The console's only script: keeps the tab's token, fetches each view's
// HTML (rendered on the server) with a bearer header, and sends the forms
// and buttons the fragments carry. No framework, no cookies.
//
// Page-wide behaviour (docs/operations.md, "The console"): a loading bar
// and aria-busy while a view loads; the live views (sessions, a session,
// policy) fetched again every 10 s unless the operator turns it off,
// keeping the scroll position, the open <details>, the focus and what a
// button answered; an error shown at the top over the dimmed, stale view
// until the next success; times aged against the server's clock; focus on
// the new view's heading and a title for each view.
"use strict";

const TOKEN = "nomos-console-token";
// "off" when the operator turned auto-refresh off, for this tab.
const REFRESH = "nomos-console-refresh";
const EVERY_MS = 10000;
// How often the ages of the times on the page are written again.
const AGE_MS = 5000;
// The views that show live state; the playground holds the operator's
// own input and is never fetched again behind their back.
const LIVE = new Set(["sessions", "session", "policy"]);
const SITE = "nomos-continue";
// The server's clock at rendering (format::NOW_HEADER).
const NOW_HEADER = "x-console-now";

const $ = (id) => document.getElementById(id);

// The server's clock minus the browser's, in ms, from the last fragment.
let clockOffset = 0;
// The load in flight, to abort when another starts.
let loading = null;
let timer = null;
// When the view shown was loaded, on the server's clock; null if none.
let loadedAt = null;

function token() {
  return sessionStorage.getItem(TOKEN);
}

function refreshOn() {
  return sessionStorage.getItem(REFRESH) !== "off";
}

class Refused extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// A request with the tab's token; the answer's text, or a Refused naming
// the status and the API's error message (status 0: no answer at all).
async function call(method, url, body, type, signal) {
  const headers = {};
  if (token()) headers["Authorization"] = "Bearer " + token();
  if (type) headers["Content-Type"] = type;
  let response;
  try {
    response = await fetch(url, { method, headers, body, cache: "no-store", signal });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new Refused(0, "The server did not answer (" + e.message + ").");
  }
  const now = Date.parse(response.headers.get(NOW_HEADER));
  if (!Number.isNaN(now)) clockOffset = now - Date.now();
  const text = await response.text();
  if (!response.ok) {
    let message = text;
    try {
      // An RFC 9457 problem (api::error): its detail says what went wrong.
      const problem = JSON.parse(text);
      message = problem.detail || problem.title || text;
    } catch (_) { /* not JSON: the text as it is */ }
    throw new Refused(response.status, response.status + " " + message);
  }
  return text;
}

// "#/session/ID?links=…" → "session".
function route(hash) {
  return (hash.replace(/^#\/?/, "").split(/[/?]/)[0]) || "sessions";
}

// "#/session/ID?links=…" → the fragment's URL.
function fragmentUrl(hash) {
  const path = hash.replace(/^#\/?/, "") || "sessions";
  const [where, query] = path.split("?");
  const parts = where.split("/");
  const search = query ? "?" + query : "";
  switch (parts[0]) {
    case "session": return "/ui/fragments/sessions/" + encodeURIComponent(parts[1] || "") + search;
    case "policy": return "/ui/fragments/policy" + search;
    case "playground": return "/ui/fragments/playground" + search;
    default: return "/ui/fragments/sessions" + search;
  }
}

// --- Times -----------------------------------------------------------

function serverNow() {
  return Date.now() + clockOffset;
}

// The same words as format::age on the server.
function age(ms) {
  const s = Math.floor(Math.abs(ms) / 1000);
  let span;
  if (s < 1) return "now";
  else if (s < 60) span = s + " s";
  else if (s < 3600) span = Math.floor(s / 60) + " min";
  else if (s < 172800) span = Math.floor(s / 3600) + " h";
  else span = Math.floor(s / 86400) + " days";
  return ms < 0 ? span + " ago" : "in " + span;
}

// A <time> as the server writes one (format::Moment).
function timeElement(ms) {
  const time = document.createElement("time");
  const iso = new Date(ms).toISOString();
  time.dateTime = iso;
  time.title = iso.replace("T", " ").replace("Z", " UTC");
  time.textContent = age(ms - serverNow());
  return time;
}

function ages(root) {
  const now = serverNow();
  for (const time of root.querySelectorAll("time[datetime]")) {
    const at = Date.parse(time.dateTime);
    if (Number.isNaN(at)) continue;
    const words = age(at - now);
    if (time.textContent !== words) time.textContent = words;
  }
}

// --- State of the page -------------------------------------------------

function busy(on) {
  $("view").setAttribute("aria-busy", on ? "true" : "false");
  document.body.classList.toggle("busy", on);
}

function showUpdated() {
  $("auto-refresh").checked = refreshOn();
  const updated = $("updated");
  updated.replaceChildren();
  if (loadedAt === null) return;
  updated.append("updated ", timeElement(loadedAt));
  if (!refreshOn()) updated.append(" (auto-refresh off)");
}

// The error at the top; the view below, if any, dimmed as out of date.
function showError(message) {
  const error = $("error");
  const view = $("view");
  error.replaceChildren();
  const stale = Boolean(message) && view.childElementCount > 0;
  if (message) {
    const what = document.createElement("p");
    what.textContent = message;
    error.append(what);
    if (stale && loadedAt !== null) {
      const note = document.createElement("p");
      note.className = "hint";
      note.append("The view below is out of date: it was loaded ", timeElement(loadedAt), ".");
      error.append(note);
    }
  }
  error.hidden = !message;
  view.classList.toggle("stale", stale);
}

function showLogin(message) {
  stopLoading();
  $("nav").hidden = true;
  $("view").innerHTML = "";
  showError("");
  loadedAt = null;
  $("status").textContent = "";
  $("login").hidden = false;
  $("login-error").textContent = message || "";
  document.title = "Sign in — " + SITE;
  $("token").focus();
}

function stopLoading() {
  clearTimeout(timer);
  timer = null;
  if (loading) loading.abort();
  loading = null;
  busy(false);
}

// --- What a refresh keeps ---------------------------------------------

// Each <details> of the view by what it is about: its own id or data-key,
// else its row's (the element's id, data-key, the execution and step of a
// timeline event, or the first cell of a table row), with its summary, and
// an ordinal among those alike.
function detailsKeys(view) {
  const seen = new Map();
  return [...view.querySelectorAll("details")].map((details) => {
    const owner = details.closest("[id], [data-key], li, tr") || details;
    const ownerKey = details.id || details.dataset.key || owner.id || owner.dataset.key ||
      [owner.dataset.step, owner.dataset.execution].join("/") + "/" +
      (owner.cells ? owner.cells[0].textContent.trim() : "");
    const summary = details.querySelector("summary");
    const base = ownerKey + "|" + (summary ? summary.textContent.trim() : "");
    const n = (seen.get(base) || 0) + 1;
    seen.set(base, n);
    return [details, base + "|" + n];
  });
}

const FOCUSABLE = "a[href], button, summary, input, select, textarea, [tabindex]";

function focusKey(view) {
  const active = document.activeElement;
  if (!active || !view.contains(active)) return null;
  if (active.id) return { id: active.id };
  return { index: [...view.querySelectorAll(FOCUSABLE)].indexOf(active), tag: active.tagName };
}

function restoreFocus(view, key) {
  if (!key) return;
  let element = key.id ? document.getElementById(key.id) : view.querySelectorAll(FOCUSABLE)[key.index];
  if (element && !key.id && element.tagName !== key.tag) element = null;
  if (element && view.contains(element)) element.focus({ preventScroll: true });
}

// Puts a refreshed fragment in place of the view, keeping what the
// operator was looking at.
function replaceKeeping(view, html) {
  const x = window.scrollX;
  const y = window.scrollY;
  const open = new Set(detailsKeys(view).filter(([d]) => d.open).map(([, key]) => key));
  const answers = [...view.querySelectorAll(".result[id]")]
    .filter((r) => r.innerHTML.trim() !== "")
    .map((r) => [r.id, r.className, r.innerHTML]);
  const focused = focusKey(view);
  view.innerHTML = html;
  for (const [details, key] of detailsKeys(view)) if (open.has(key)) details.open = true;
  for (const [id, className, inner] of answers) {
    const place = document.getElementById(id);
    if (place && view.contains(place) && place.innerHTML.trim() === "") {
      place.className = className;
      place.innerHTML = inner;
    }
  }
  restoreFocus(view, focused);
  window.scrollTo(x, y);
}

// --- Loading -----------------------------------------------------------

// Fetches the view the address names: shown anew (focus on its heading),
// or, with `refresh`, in place of the same view, keeping what is open.
async function load(refresh) {
  if (loading) loading.abort();
  const controller = new AbortController();
  loading = controller;
  clearTimeout(timer);
  busy(true);
  if (!refresh) $("status").textContent = "Loading…";
  const view = $("view");
  try {
    const html = await call("GET", fragmentUrl(location.hash), undefined, undefined, controller.signal);
    if (loading !== controller) return;
    if (refresh) replaceKeeping(view, html);
    else view.innerHTML = html;
    loadedAt = serverNow();
    showError("");
    ages(view);
    // The view's own heading, not one of a part it includes (the overview).
    const heading = view.querySelector("section.view > h2") || view.querySelector("h2");
    document.title = (heading ? heading.textContent.trim().replace(/\s+/g, " ") : "Console") + " — " + SITE;
    if (!refresh && heading) {
      heading.tabIndex = -1;
      heading.focus();
    }
    $("status").textContent = "";
  } catch (e) {
    if (e.name === "AbortError" || loading !== controller) return;
    if (e.status === 401) {
      sessionStorage.removeItem(TOKEN);
      return showLogin("The server refused this token.");
    }
    $("status").textContent = "";
    showError((refresh ? "Could not refresh this view: " : "Could not load this view: ") + e.message);
  } finally {
    if (loading === controller) {
      loading = null;
      busy(false);
      showUpdated();
      schedule();
    }
  }
}

// Whether a refresh now would take nothing from the operator: the view is
// live, the tab is seen, and they are not typing or selecting in it.
function mayRefresh() {
  if (!refreshOn() || token() === null || !$("login").hidden || document.hidden) return false;
  if (!LIVE.has(route(location.hash))) return false;
  const view = $("view");
  const active = document.activeElement;
  if (active && view.contains(active) && active.matches("input, textarea, select")) return false;
  const selection = window.getSelection();
  if (selection && !selection.isCollapsed && view.contains(selection.anchorNode)) return false;
  return true;
}

function schedule() {
  clearTimeout(timer);
  timer = null;
  if (!refreshOn() || token() === null) return;
  timer = setTimeout(() => {
    if (!loading && mayRefresh()) load(true);
    else schedule();
  }, EVERY_MS);
}

function show() {
  if (token() === null) return showLogin();
  $("login").hidden = true;
  $("login-error").textContent = "";
  $("nav").hidden = false;
  const current = route(location.hash);
  for (const link of document.querySelectorAll("[data-nav]")) {
    const here = link.dataset.nav === (current === "session" ? "sessions" : current);
    link.classList.toggle("current", here);
    if (here) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  return load(false);
}

// --- Forms and buttons ---------------------------------------------------

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
    ages(place);
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
  const target = event.target;
  if (target.id === "auto-refresh") {
    sessionStorage.setItem(REFRESH, target.checked ? "on" : "off");
    showUpdated();
    schedule();
    return;
  }
  if (target.dataset && target.dataset.autosubmit) target.form.requestSubmit();
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

// A tab seen again after a while is brought up to date at once.
document.addEventListener("visibilitychange", () => {
  if (!document.hidden && !loading && loadedAt !== null && serverNow() - loadedAt >= EVERY_MS && mayRefresh()) {
    load(true);
  }
});

window.addEventListener("hashchange", show);
document.addEventListener("DOMContentLoaded", () => {
  $("auto-refresh").checked = refreshOn();
  setInterval(() => ages(document), AGE_MS);
  show();
});
