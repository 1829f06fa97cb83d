// stepsaga console: the only script (no inline script: the CSP forbids it).
// 1. Asks before a form that changes something is sent (the checked radio's data-confirm
//    when the form says data-confirm-from, so the question matches the effect).
// 2. Copy buttons. 3. Live pages: the [data-live] region is fetched again every N ms and
//    swapped in place (never while a field in it is focused or has been typed in); 0 stops.
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

(function live() {
  var region = document.querySelector("[data-live]");
  if (!region) { return; }
  var dirty = false;
  region.addEventListener("input", function () { dirty = true; });
  var status = document.createElement("p");
  status.className = "live-status";
  status.setAttribute("role", "status");
  region.parentNode.insertBefore(status, region);
  function busy() {
    var active = document.activeElement;
    return dirty || (active && region.contains(active) && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName));
  }
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
  function refresh() {
    if (busy()) { status.textContent = "paused while you type (the page refreshes again after you send or reload)"; }
    if (document.hidden || busy()) { setTimeout(refresh, 1000); return; }
    fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) { return response.text(); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("[data-live]");
        if (fresh && !busy()) {
          var open = Array.prototype.map.call(region.querySelectorAll("details[open][id]"), function (d) { return d.id; });
          var closed = Array.prototype.map.call(region.querySelectorAll("details[id]:not([open])"), function (d) { return d.id; });
          if (fresh.innerHTML !== region.innerHTML) {
            region.innerHTML = fresh.innerHTML;
            open.forEach(function (id) { var d = document.getElementById(id); if (d) { d.open = true; } });
            closed.forEach(function (id) { var d = document.getElementById(id); if (d) { d.open = false; } });
          }
          region.setAttribute("data-live", fresh.getAttribute("data-live"));
        }
        schedule();
      }, function () { status.textContent = "live: the console did not answer; retrying"; setTimeout(refresh, 3000); });
  }
  openTarget();
  schedule();
})();
