// The inbox's clock: countdowns to expiry, settled rows fading out, no duplicate rows.
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
    document.querySelectorAll(".approval.settled").forEach(function (el) {
      if (!el.dataset.settledAt) { el.dataset.settledAt = String(now); return; }
      if (now - Number(el.dataset.settledAt) > SETTLED_KEEP_MS) { el.remove(); }
    });
    var seen = {};
    document.querySelectorAll(".approval[id]").forEach(function (el) {
      if (seen[el.id]) { seen[el.id].remove(); }
      seen[el.id] = el;
    });
  }
  // Tests and people can see whether the live connection is up.
  document.addEventListener("htmx:wsOpen", function () { document.body.dataset.live = "open"; });
  document.addEventListener("htmx:wsClose", function () { document.body.dataset.live = "closed"; });
  setInterval(tick, 1000);
  document.addEventListener("DOMContentLoaded", tick);
  document.addEventListener("htmx:wsAfterMessage", tick);
})();
