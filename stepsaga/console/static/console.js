// stepsaga console: the only script (no inline script: the CSP forbids it).
// 1. Asks before a form that changes something is sent (the checked radio's data-confirm
//    when the form says data-confirm-from, so the question matches the effect).
// 2. Copy buttons. 3. Drafts: what is typed into a form that changes something is kept in
//    localStorage (per page and form) until the page after its submit shows no refusal,
//    so a restart, a 403 or a reload loses nothing. 4. Live pages: the [data-live] region
//    is fetched again every N ms and swapped in place, never while you type (it waits until
//    QUIET ms after the last keystroke) and keeping the fields' values, focus and caret.
"use strict";
document.addEventListener("submit", function (event) {
  var form = event.target;
  var question = form.getAttribute("data-confirm");
  var from = form.getAttribute("data-confirm-from");
  if (from) {
    var checked = form.querySelector("input[name='" + from + "']:checked");
    question = checked ? checked.getAttribute("data-confirm") : null;
  }
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});

document.addEventListener("click", function (event) {
  var button = event.target.closest ? event.target.closest("button.copy") : null;
  if (!button) { return; }
  var value = button.getAttribute("data-copy");
  var done = function () { button.textContent = "copied"; setTimeout(function () { button.textContent = "copy"; }, 1500); };
  if (navigator.clipboard && navigator.clipboard.writeText) {
    navigator.clipboard.writeText(value).then(done, function () { button.textContent = "copy failed"; });
  }
});

function openTarget() {
  // a graph node links to its step: open that step's details
  var id = decodeURIComponent(location.hash.slice(1));
  var target = id && document.getElementById(id);
  if (target && target.tagName === "DETAILS") { target.open = true; target.focus(); }
}
window.addEventListener("hashchange", openTarget);

// --- drafts ----------------------------------------------------------------------------
var DRAFT = "stepsaga-draft:";
var SENT = "stepsaga-sent";
function store() { try { return window.localStorage; } catch (e) { return null; } }
function draftKey(field) {
  var form = field.form;
  if (!form || form.method.toLowerCase() !== "post" || !field.name || field.type === "hidden") { return null; }
  return DRAFT + location.pathname + "|" + (form.id || form.getAttribute("action")) + "|" + field.name;
}
document.addEventListener("input", function (event) { saveDraft(event.target); });
document.addEventListener("change", function (event) { saveDraft(event.target); });
function saveDraft(field) {
  var key = field && field.form ? draftKey(field) : null;
  var s = store();
  if (!key || !s) { return; }
  if (field.type === "radio" || field.type === "checkbox") {
    if (field.checked) { s.setItem(key, field.value); }
  } else if (field.value) { s.setItem(key, field.value); } else { s.removeItem(key); }
}
function restoreDrafts(root) {
  var s = store();
  if (!s) { return; }
  Array.prototype.forEach.call(root.querySelectorAll("form input, form textarea, form select"), function (field) {
    var key = draftKey(field);
    var saved = key ? s.getItem(key) : null;
    if (saved === null) { return; }
    if (field.type === "radio" || field.type === "checkbox") {
      var form = field.form, name = field.name;
      var anyChecked = form.querySelector("input[name='" + name + "']:checked");
      if (!anyChecked && field.value === saved) { field.checked = true; }
    } else if (!field.value) { field.value = saved; }
  });
}
// after the browser's own submit handlers: a form whose confirm was declined is not sent
document.addEventListener("submit", function (event) {
  var s = store();
  if (event.defaultPrevented || !s || event.target.method.toLowerCase() !== "post") { return; }
  var keys = Array.prototype.map.call(event.target.elements, draftKey).filter(Boolean);
  s.setItem(SENT, JSON.stringify({ page: location.pathname, keys: keys }));
});
(function settleDrafts() {
  // the page a submit landed on: its own page without a refusal means it was taken; a
  // refusal, or the 403 of a restarted console (and any other page), keeps the draft
  var s = store();
  var sent = s && s.getItem(SENT);
  if (!sent) { return; }
  if (document.querySelector("[data-keep-drafts]")) { return; }
  sent = JSON.parse(sent);
  if (location.pathname === sent.page && !document.querySelector("#form-error")) {
    sent.keys.forEach(function (key) { s.removeItem(key); });
  }
  s.removeItem(SENT);
})();
restoreDrafts(document);

// --- live pages --------------------------------------------------------------------------
var QUIET = 1500;  // ms after the last keystroke before the region may be swapped
(function live() {
  var region = document.querySelector("[data-live]");
  if (!region) { return; }
  var lastTyped = 0;
  region.addEventListener("input", function () { lastTyped = Date.now(); });
  region.addEventListener("keydown", function () { lastTyped = Date.now(); });
  var status = document.createElement("p");
  status.className = "live-status";
  status.setAttribute("role", "status");
  region.parentNode.insertBefore(status, region);
  function typing() { return Date.now() - lastTyped < QUIET; }
  function choosing() {
    var active = document.activeElement;
    return active && region.contains(active) && active.tagName === "SELECT";
  }
  function busy() { return typing() || choosing(); }
  function schedule() {
    var every = parseInt(region.getAttribute("data-live"), 10) || 0;
    if (every > 0) {
      status.textContent = "live: refreshes every " + every / 1000 + " s";
      setTimeout(refresh, every);
    } else {
      status.textContent = "up to date: nothing is moving";
      status.classList.add("paused");
    }
  }
  function fields() {
    // what the user has in the region's fields now, by id
    var kept = {};
    Array.prototype.forEach.call(region.querySelectorAll("input[id], textarea[id], select[id]"), function (f) {
      if (f.type !== "hidden") { kept[f.id] = { value: f.value, checked: f.checked }; }
    });
    return kept;
  }
  function swap(fresh) {
    var kept = fields();
    var active = document.activeElement;
    var focused = active && region.contains(active) && active.id ? active.id : null;
    var caret = focused && typeof active.selectionStart === "number" ? [active.selectionStart, active.selectionEnd] : null;
    var open = Array.prototype.map.call(region.querySelectorAll("details[open][id]"), function (d) { return d.id; });
    var closed = Array.prototype.map.call(region.querySelectorAll("details[id]:not([open])"), function (d) { return d.id; });
    region.innerHTML = fresh.innerHTML;
    Object.keys(kept).forEach(function (id) {
      var f = document.getElementById(id);
      if (!f) { return; }
      if (f.type === "radio" || f.type === "checkbox") { f.checked = kept[id].checked; } else { f.value = kept[id].value; }
    });
    restoreDrafts(region);
    open.forEach(function (id) { var d = document.getElementById(id); if (d) { d.open = true; } });
    closed.forEach(function (id) { var d = document.getElementById(id); if (d) { d.open = false; } });
    var again = focused && document.getElementById(focused);
    if (again) {
      again.focus();
      if (caret) { try { again.setSelectionRange(caret[0], caret[1]); } catch (e) { /* not a text field */ } }
    }
  }
  function refresh() {
    if (busy()) {
      status.textContent = "paused while you type (refreshes " + QUIET / 1000 + " s after you stop)";
      setTimeout(refresh, 500);
      return;
    }
    if (document.hidden) { setTimeout(refresh, 1000); return; }
    fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) { return response.text(); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("[data-live]");
        if (fresh && busy()) { refresh(); return; }  // typing began meanwhile: try again after
        if (fresh) {
          if (fresh.innerHTML !== region.innerHTML) { swap(fresh); }
          region.setAttribute("data-live", fresh.getAttribute("data-live"));
          region.setAttribute("data-refreshed", String(Date.now()));
        }
        schedule();
      }, function () { status.textContent = "live: the console did not answer; retrying"; setTimeout(refresh, 3000); });
  }
  openTarget();
  schedule();
})();
