// The inbox by keyboard: j/k or arrows move between requests, a approves, d denies (asking
// for a reason first), x selects, Shift+X selects all, Esc returns from a field to its
// request. New requests and decisions are announced to screen readers.
(function () {
  "use strict";

  function requests() {
    return Array.prototype.slice.call(
      document.querySelectorAll(".inbox .approval:not(.settled)")
    );
  }
  function current() {
    var focused = document.activeElement && document.activeElement.closest &&
      document.activeElement.closest(".inbox .approval:not(.settled)");
    return focused || document.querySelector(".inbox .approval.current:not(.settled)");
  }
  function focusRequest(el) {
    if (!el) { return; }
    document.querySelectorAll(".inbox .approval.current").forEach(function (c) {
      c.classList.remove("current");
    });
    el.classList.add("current");
    el.setAttribute("tabindex", "-1");
    el.focus();
    el.scrollIntoView({ block: "nearest" });
  }
  function move(step) {
    var all = requests();
    if (!all.length) { return; }
    var at = all.indexOf(current());
    var next = at < 0 ? (step > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, at + step));
    focusRequest(all[next]);
  }
  function press(card, selector) {
    var button = card && card.querySelector(selector);
    if (button && !button.disabled) { button.click(); }
  }
  function deny(card) {
    var reason = card && card.querySelector("input[name^=reason-]");
    if (reason && !reason.value.trim()) {
      // A denial needs a reason: go to the field; Enter there denies.
      reason.focus();
      return;
    }
    press(card, "button.deny");
  }
  function selectAll(on) {
    document.querySelectorAll(".inbox .approval:not(.settled) input[name=ids]").forEach(function (box) {
      box.checked = on;
    });
    var all = document.getElementById("select-all");
    if (all) { all.checked = on; }
  }

  document.addEventListener("change", function (e) {
    if (e.target && e.target.id === "select-all") { selectAll(e.target.checked); }
  });
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) { return; }
    var target = e.target;
    var typing = target && /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName) &&
      target.type !== "checkbox";
    if (typing) {
      var card = target.closest(".approval");
      if (e.key === "Escape" && card) { e.preventDefault(); focusRequest(card); }
      if (e.key === "Enter" && card && target.name && target.name.indexOf("reason-") === 0) {
        e.preventDefault();
        if (target.value.trim()) { press(card, "button.deny"); }
      }
      return;
    }
    var key = e.key;
    if (key === "j" || key === "ArrowDown") { e.preventDefault(); move(1); }
    else if (key === "k" || key === "ArrowUp") { e.preventDefault(); move(-1); }
    else if (key === "a") { e.preventDefault(); press(current(), "button.approve"); }
    else if (key === "d") { e.preventDefault(); deny(current()); }
    else if (key === "x") {
      var box = current() && current().querySelector("input[name=ids]");
      if (box) { e.preventDefault(); box.checked = !box.checked; }
    } else if (key === "X") {
      e.preventDefault();
      var boxes = document.querySelectorAll(".inbox .approval:not(.settled) input[name=ids]");
      var allOn = Array.prototype.every.call(boxes, function (b) { return b.checked; });
      selectAll(!allOn);
    }
  });

  // Announcements: what arrived and what was settled, in a few words.
  var announced = {};
  function announce(text) {
    var region = document.getElementById("inbox-announcer");
    if (region && text) { region.textContent = text; }
  }
  function describe(card) {
    var tool = card.querySelector(".tool");
    var agent = card.querySelector(".agent strong");
    return (tool ? tool.textContent.trim() : "a request") + (agent ? " by " + agent.textContent.trim() : "");
  }
  function survey(quiet) {
    var arrived = [], settled = [];
    document.querySelectorAll(".inbox .approval[id]").forEach(function (card) {
      var state = card.classList.contains("settled") ? "settled" : "pending";
      if (announced[card.id] === state) { return; }
      if (!quiet) {
        if (state === "pending" && !announced[card.id]) { arrived.push(describe(card)); }
        if (state === "settled") {
          var verdict = card.querySelector(".verdict");
          settled.push(describe(card) + ": " + (verdict ? verdict.textContent.trim() : "settled"));
        }
      }
      announced[card.id] = state;
    });
    var words = [];
    if (arrived.length) { words.push((arrived.length === 1 ? "New request: " : arrived.length + " new requests: ") + arrived.join("; ")); }
    if (settled.length) { words.push(settled.join("; ")); }
    announce(words.join(". "));
  }
  document.addEventListener("DOMContentLoaded", function () { survey(true); });
  document.addEventListener("htmx:wsAfterMessage", function () { survey(false); });
  document.addEventListener("htmx:afterSettle", function () { survey(false); });
})();
