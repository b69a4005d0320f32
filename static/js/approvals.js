// The inbox's clock (countdowns to expiry, settled rows fading out, no duplicate rows) and
// its live connection (reconnect and resync after any drop).
(function () {
  "use strict";
  var SETTLED_KEEP_MS = 6000;

  // "in 45 min", "in 1 h 5 min", "in 40 s": rounded up, as the deadline falls within it
  // (the server writes the same words: approvals_app.templatetags.approvals.time_left).
  function timeLeft(seconds) {
    if (seconds < 60) { return "in " + Math.ceil(seconds) + " s"; }
    var minutes = Math.ceil(seconds / 60);
    if (minutes < 60) { return "in " + minutes + " min"; }
    var h = Math.floor(minutes / 60), m = minutes % 60;
    return "in " + h + " h" + (m ? " " + m + " min" : "");
  }

  function tick() {
    var now = Date.now();
    var stale = document.body.dataset.sync === "stale";
    document.querySelectorAll("[data-expires-at]").forEach(function (el) {
      // Offline, the page cannot know whether a request is still open: it claims nothing.
      el.classList.toggle("stale", stale);
      if (stale) { el.textContent = "paused: reconnecting"; return; }
      var left = (Date.parse(el.dataset.expiresAt) - now) / 1000;
      if (left <= 0) { el.textContent = "expiring"; el.classList.add("due"); return; }
      el.classList.remove("due");
      el.textContent = timeLeft(left);
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
  // Reconnecting: the socket holds no state. On every (re)connect the server sends what
  // differs between the page and the database now, so whatever was missed while away is
  // put right.
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
  // After a drop the page is stale: the banner says so, countdowns pause and deciding is
  // off until the first message of the new connection (the server's resync) is applied.
  var awaitingResync = false;
  function pauseButtons() {
    var stale = document.body.dataset.sync === "stale";
    document.querySelectorAll(".inbox button").forEach(function (b) {
      if (stale && !b.disabled) { b.disabled = true; b.dataset.pausedOffline = "1"; }
      if (!stale && b.dataset.pausedOffline) { b.disabled = false; delete b.dataset.pausedOffline; }
    });
  }
  function setSync(state) {
    document.body.dataset.sync = state;
    var banner = document.getElementById("connection-state");
    if (banner) { banner.hidden = state !== "stale"; }
    pauseButtons();
    tick();
  }
  window.inboxIsStale = function () { return document.body.dataset.sync === "stale"; };
  document.addEventListener("DOMContentLoaded", function () { document.body.dataset.sync = "synced"; });
  document.addEventListener("htmx:afterSettle", pauseButtons);
  document.addEventListener("htmx:oobAfterSwap", pauseButtons);
  document.addEventListener("htmx:wsAfterMessage", function () {
    if (awaitingResync) { awaitingResync = false; setSync("synced"); }
  });
  // The inbox asks for its resync as a difference: it tells the server which requests it
  // shows, and how, and gets only what it lacks or shows wrongly (the whole inbox on a
  // page of thousands was rendered and swapped twice, and the person's selection lost).
  function sayWhatIsShown(socket) {
    var url = document.body.getAttribute("ws-connect") || "";
    if (url.indexOf("resync=diff") < 0) { return; }
    var have = [], groups = {}, through = {};
    document.querySelectorAll("#approval-inbox .approval[data-request]").forEach(function (el) {
      have.push([el.dataset.request, el.dataset.status, el.dataset.escalated ? 1 : 0]);
    });
    // The requests each group counts without showing them, and how far each risk tier is
    // loaded ("end", or up to the entry its "show more" continues after): the server
    // sends nothing past that, as the page did not ask for it yet.
    document.querySelectorAll("#approval-inbox .group .group-ids").forEach(function (el) {
      var ids = el.getAttribute("data-ids");
      groups[el.id.replace(/^grp-ids-/, "")] = ids ? ids.split(" ") : [];
    });
    document.querySelectorAll("#approval-inbox .more[id^=more-]").forEach(function (el) {
      through[el.id.replace(/^more-/, "")] = el.hasAttribute("data-after") ? el.dataset.after : "end";
    });
    socket.send(JSON.stringify({ have: have, groups: groups, through: through }));
  }
  document.addEventListener("htmx:wsOpen", function (e) {
    wrapper = e.detail.socketWrapper; retries = 0;
    document.body.dataset.live = "open";
    awaitingResync = document.body.dataset.sync === "stale";
    sayWhatIsShown(e.detail.socketWrapper);
  });
  document.addEventListener("htmx:wsClose", function (e) {
    wrapper = e.detail.socketWrapper || wrapper;
    document.body.dataset.live = "closed";
    awaitingResync = false;
    if (!leaving) { setSync("stale"); }
    var code = e.detail.event ? e.detail.event.code : 0;
    if (EXTENSION_RETRIES.indexOf(code) < 0) { reconnectSoon(); }
  });
  // A refused decision is told on the request it was about, and a missing reason beside the
  // reason field the person used (the card's own, or the toolbar's for the selected).
  // A refusal of one request inside a decision on many is told on its card when the card
  // is on screen (the answer's list names every one).
  function placeRefusal(li, elt) {
    var id = li.dataset.request;
    var card = id && (document.getElementById("req-" + id) || document.getElementById("promo-" + id));
    var fromCard = elt && elt.closest && elt.closest(".approval");
    var fromGroup = !fromCard && elt && elt.closest && elt.closest(".group .group-actions");
    var host = fromCard ? card : fromGroup || document.querySelector(".inbox .toolbar");
    if (id && !li.dataset.field && !fromCard) { host = card; }
    if (!host) { return; }
    var text = li.textContent.trim();
    var field = li.dataset.field === "reason" &&
      host.querySelector(fromCard ? "input[name^=reason-]" : "input[name=reason]");
    var box = document.createElement("p");
    box.className = "action-error";
    box.setAttribute("role", "alert");
    box.textContent = text;
    if (field) {
      box.id = "error-" + (field.name || "reason");
      if (document.getElementById(box.id)) { return; }  // one message per field
      field.setAttribute("aria-invalid", "true");
      field.setAttribute("aria-describedby", box.id);
      field.insertAdjacentElement("afterend", box);
      field.focus();
      return;
    }
    if (!fromCard && card) { host = card; }
    host.appendChild(box);
  }
  document.addEventListener("htmx:afterSwap", function (e) {
    if (!e.detail.target || e.detail.target.id !== "decide-feedback") { return; }
    var elt = e.detail.requestConfig ? e.detail.requestConfig.elt : e.detail.elt;
    document.querySelectorAll(".inbox .action-error").forEach(function (el) { el.remove(); });
    document.querySelectorAll(".inbox [aria-invalid]").forEach(function (el) {
      el.removeAttribute("aria-invalid"); el.removeAttribute("aria-describedby");
    });
    e.detail.target.querySelectorAll("li.refused").forEach(function (li) { placeRefusal(li, elt); });
  });
  setInterval(tick, 1000);
  document.addEventListener("DOMContentLoaded", tick);
  document.addEventListener("htmx:wsAfterMessage", tick);
})();
