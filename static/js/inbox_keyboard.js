// The inbox by keyboard: j/k or arrows move between requests, a approves, d denies (asking
// for a reason first), x selects, Shift+X selects all waiting (or clears the selection),
// Esc returns from a field to its request. After a decision made on a request the focus
// moves to the next one, so triage keeps its place. New requests and decisions are
// announced to screen readers.
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
    if (el.classList.contains("settled")) { return; }
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
  window.inboxFocusRequest = focusRequest;

  // A decision made on a request (its button, a, d, or Enter in its reason): once the
  // answer has settled it, the focus goes to the next request. A refused decision keeps
  // the focus where the refusal is told.
  var deciding = null;
  document.addEventListener("htmx:beforeRequest", function (e) {
    var elt = e.detail.elt;
    var card = elt && elt.closest && elt.closest(".inbox .approval[id]");
    var isDecision = elt && elt.matches && elt.matches("button.approve, button.deny");
    deciding = card && isDecision ? card.id : deciding;
  });
  document.addEventListener("htmx:afterSettle", function (e) {
    var target = e.detail.target;
    if (!deciding || !target || target.id !== "decide-feedback") { return; }
    var id = deciding;
    deciding = null;
    var card = document.getElementById(id);
    if (card && !card.classList.contains("settled")) { return; }
    var active = document.activeElement;
    var lost = !active || active === document.body || !document.contains(active) ||
      (card && card.contains(active));
    if (!lost) { return; }
    if (card && window.inboxFocusAfter) { window.inboxFocusAfter(card); }
    else if (window.inboxFocusAfter) { window.inboxFocusAfter(document.querySelector("main h1")); }
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
      if (box) { e.preventDefault(); box.click(); }
    } else if (key === "X") {
      e.preventDefault();
      var selection = window.inboxSelection;
      if (!selection) { return; }
      if (selection.size()) { selection.clear(); } else { selection.selectAll(); }
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
  // What "show more" brought waited already: it is not announced as new.
  document.addEventListener("htmx:afterSettle", function (e) {
    var target = e.detail.target;
    survey(!!(target && /^(more-|group-more-)/.test(target.id || "")));
  });
})();
