// The inbox's clock (countdowns to expiry, settled rows fading out, no duplicate rows) and
// its live connection (reconnect and resync after any drop).
(function () {
  "use strict";
  var SETTLED_KEEP_MS = 6000;

  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-expires-at]").forEach(function (el) {
      var left = Math.round((Date.parse(el.dataset.expiresAt) - now) / 1000);
      if (left <= 0) { el.textContent = "expiring"; el.classList.add("due"); return; }
      var m = Math.floor(left / 60), s = left % 60;
      el.textContent = (m > 0 ? m + "m " : "") + (s < 10 && m > 0 ? "0" : "") + s + "s left";
    });
    // How long a request has waited, so a person sees what has been sitting longest.
    document.querySelectorAll("[data-created-at]").forEach(function (el) {
      var age = Math.max(0, Math.round((now - Date.parse(el.dataset.createdAt)) / 1000));
      var h = Math.floor(age / 3600), m = Math.floor((age % 3600) / 60), s = age % 60;
      el.textContent = "asked " + (h > 0 ? h + "h " + m + "m" : m > 0 ? m + "m " + s + "s" : s + "s") + " ago";
    });
    document.querySelectorAll(".approval.settled").forEach(function (el) {
      if (!el.dataset.settledAt) { el.dataset.settledAt = String(now); return; }
      if (now - Number(el.dataset.settledAt) > SETTLED_KEEP_MS) { el.remove(); }
    });
    // Two copies of one row: keep the later one, unless only the earlier one is settled
    // (a settled request never becomes pending again, whatever order messages came in).
    var seen = {};
    document.querySelectorAll(".approval[id]").forEach(function (el) {
      var other = seen[el.id];
      if (other && other.classList.contains("settled") && !el.classList.contains("settled")) {
        el.remove(); return;
      }
      if (other) { other.remove(); }
      seen[el.id] = el;
    });
  }
  // Reconnecting: the socket holds no state. On every (re)connect the server sends the
  // inbox as the database has it now, so whatever was missed while away is put right.
  // The ws extension retries by itself after 1006, 1011, 1012 and 1013; any other close
  // (a proxy's 1001 on restart, a close from the page) is retried here, unless the page
  // is going away. Waits grow to at most RECONNECT_MAX_MS, with jitter.
  var RECONNECT_MAX_MS = 5000;
  var EXTENSION_RETRIES = [1006, 1011, 1012, 1013];
  var leaving = false, retries = 0, timer = null, wrapper = null;
  function delay(n) {
    return Math.min(RECONNECT_MAX_MS, 250 * Math.pow(2, Math.min(n, 5))) * (0.5 + Math.random() / 2);
  }
  function reconnectSoon() {
    if (leaving || timer || !wrapper) { return; }
    timer = setTimeout(function () { timer = null; retries += 1; wrapper.reconnect(); }, delay(retries));
  }
  window.addEventListener("pagehide", function () { leaving = true; });
  window.addEventListener("beforeunload", function () { leaving = true; });
  if (window.htmx) { htmx.config.wsReconnectDelay = delay; }
  document.addEventListener("DOMContentLoaded", function () {
    if (window.htmx) { htmx.config.wsReconnectDelay = delay; }
  });
  // Tests and people can see whether the live connection is up.
  document.addEventListener("htmx:wsOpen", function (e) {
    wrapper = e.detail.socketWrapper; retries = 0;
    document.body.dataset.live = "open";
  });
  document.addEventListener("htmx:wsClose", function (e) {
    wrapper = e.detail.socketWrapper || wrapper;
    document.body.dataset.live = "closed";
    var code = e.detail.event ? e.detail.event.code : 0;
    if (EXTENSION_RETRIES.indexOf(code) < 0) { reconnectSoon(); }
  });
  setInterval(tick, 1000);
  document.addEventListener("DOMContentLoaded", tick);
  document.addEventListener("htmx:wsAfterMessage", tick);
})();
