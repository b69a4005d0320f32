// The inbox's selection and its groups. What "Approve selected" decides is a set of
// request ids kept here (rows ticked on screen, whole groups, an agent's or a tool's
// requests asked of the server at that moment), sent as one field: never every card's
// fields. A group counts its ids; requests that arrive join their group, settled ones
// leave it, and a group with none left goes.
(function () {
  "use strict";
  var selected = new Set();

  function toolbar() { return document.querySelector("#approval-inbox .toolbar"); }
  function groupOf(key) { return key ? document.getElementById("grp-" + key) : null; }
  function idsOf(group) {
    var holder = group && group.querySelector(".group-ids");
    var text = holder ? holder.getAttribute("data-ids") || "" : "";
    return text ? text.split(" ") : [];
  }
  function setIds(group, ids) {
    var holder = group.querySelector(".group-ids");
    if (holder) { holder.setAttribute("data-ids", ids.join(" ")); }
  }
  function standalone(row) { return !row.closest(".group"); }
  function allMembersShown(group) { return !group.querySelector(".group-more button"); }

  // Where the focus goes when what holds it leaves: the next request, else the one
  // before, else the page's heading (never the page's body).
  function focusAfter(gone) {
    var stops = Array.prototype.slice.call(document.querySelectorAll(".inbox .approval:not(.settled)"));
    var next = null, before = null;
    stops.forEach(function (el) {
      if (el === gone || gone.contains(el) || el.contains(gone)) { return; }
      var following = gone.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING;
      if (following && !next) { next = el; }
      if (!following) { before = el; }
    });
    var target = next || before || document.querySelector("main h1");
    if (!target) { return; }
    if (!target.hasAttribute("tabindex")) { target.setAttribute("tabindex", "-1"); }
    if (window.inboxFocusRequest && target.classList.contains("approval")) {
      window.inboxFocusRequest(target);
    } else {
      target.focus();
    }
  }
  window.inboxFocusAfter = focusAfter;

  function dropIds(ids) {
    if (!ids.length) { return; }
    var gone = new Set(ids);
    ids.forEach(function (id) { selected.delete(id); });
    document.querySelectorAll(".inbox .group").forEach(function (group) {
      var kept = idsOf(group).filter(function (id) { return !gone.has(id); });
      setIds(group, kept);
    });
  }

  // A pending row outside its group while the group is on the page: it joins the group
  // (shown when all the group's members are shown, else counted and shown on demand).
  function absorb() {
    document.querySelectorAll(".inbox .rows > .approval[data-group]:not(.settled)").forEach(function (row) {
      var group = groupOf(row.dataset.group);
      if (!group || !standalone(row)) { return; }
      var ids = idsOf(group);
      if (ids.indexOf(row.dataset.request) < 0) { ids.push(row.dataset.request); setIds(group, ids); }
      if (allMembersShown(group)) {
        group.querySelector(".members").appendChild(row);
      } else {
        row.remove();
      }
    });
  }

  function waitingTotal() {
    var total = 0;
    document.querySelectorAll(".inbox .waiting[data-waiting]").forEach(function (el) {
      total += Number(el.dataset.waiting) || 0;
    });
    return total;
  }

  // What the last choice selected ("30 selected (30 requests by build-bot)"), kept while
  // the selection stays that size: the live updates that follow do not wipe it.
  var described = null;

  function showCount(words) {
    var out = document.getElementById("selected-count");
    if (!out) { return; }
    if (words) { out.textContent = words; return; }
    if (described && described.size === selected.size) { out.textContent = described.words; return; }
    described = null;
    out.textContent = selected.size ? selected.size.toLocaleString("en") + " selected" : "none selected";
  }

  // "Select by" names every agent and tool with a request on the page, those that
  // arrived since it loaded too.
  function addFacets() {
    var choice = document.getElementById("select-by");
    if (!choice) { return; }
    var known = {};
    Array.prototype.forEach.call(choice.options, function (o) { known[o.value] = true; });
    document.querySelectorAll(".inbox .approval[data-agent]:not(.settled)").forEach(function (row) {
      [["agent", row.dataset.agent, "Agent"], ["tool", row.dataset.tool, "Tool"]].forEach(function (f) {
        var value = f[0] + "=" + encodeURIComponent(f[1] || "");
        if (!f[1] || known[value]) { return; }
        var group = choice.querySelector("optgroup[label=" + f[2] + "]");
        if (!group) { group = document.createElement("optgroup"); group.label = f[2]; choice.appendChild(group); }
        var option = document.createElement("option");
        option.value = value;
        option.dataset.what = (f[0] === "agent" ? "by " : "of ") + f[1];
        option.textContent = f[0] === "agent" ? f[1] + "'s requests" : f[1] + " requests";
        group.appendChild(option);
        known[value] = true;
      });
    });
  }

  function reconcile() {
    var settled = [];
    document.querySelectorAll(".inbox .approval.settled[data-request]").forEach(function (row) {
      settled.push(row.dataset.request);
    });
    dropIds(settled);
    absorb();
    document.querySelectorAll(".inbox .group").forEach(function (group) {
      var ids = idsOf(group);
      var pendingInside = group.querySelector(".approval:not(.settled)");
      if (!ids.length && !pendingInside) {
        var active = document.activeElement;
        if (active && group.contains(active)) { focusAfter(group); }
        group.remove();
        return;
      }
      group.querySelectorAll(".group-count").forEach(function (el) { el.textContent = String(ids.length); });
      var box = group.querySelector("input.pick-group");
      if (box) {
        var chosen = ids.filter(function (id) { return selected.has(id); }).length;
        box.checked = chosen > 0 && chosen === ids.length;
        box.indeterminate = chosen > 0 && chosen < ids.length;
      }
    });
    document.querySelectorAll(".inbox .approval input[name=ids]").forEach(function (box) {
      box.checked = selected.has(box.value);
    });
    var all = document.getElementById("select-all");
    if (all) { all.checked = selected.size > 0 && selected.size >= waitingTotal(); }
    addFacets();
    showCount();
  }
  window.inboxReconcile = reconcile;

  function selectFrom(query, what) {
    var bar = toolbar();
    var url = (bar && bar.dataset.selectUrl) || "/approvals/select/";
    showCount("selecting…");
    return fetch(url + (query ? "?" + query : ""), {
      credentials: "same-origin", headers: { "Accept": "application/json" }
    }).then(function (answer) {
      return answer.json().then(function (body) {
        if (!answer.ok) { throw new Error((body.error && body.error.message) || String(answer.status)); }
        body.ids.forEach(function (id) { selected.add(id); });
        described = null;
        reconcile();
        described = { size: selected.size, words: selected.size.toLocaleString("en") + " selected (" +
          body.count.toLocaleString("en") + " " + (what || "waiting") + ")" };
        showCount();
      });
    }).catch(function (error) {
      reconcile();
      showCount("could not select: " + error.message);
    });
  }

  window.inboxSelection = {
    has: function (id) { return selected.has(id); },
    size: function () { return selected.size; },
    selectAll: function () { return selectFrom("", "waiting"); },
    clear: function () { selected.clear(); reconcile(); }
  };

  document.addEventListener("change", function (e) {
    var box = e.target;
    if (!box || !box.closest || !box.closest("#approval-inbox")) { return; }
    if (box.name === "ids") {
      if (box.checked) { selected.add(box.value); } else { selected.delete(box.value); }
      reconcile();
    } else if (box.classList.contains("pick-group")) {
      var ids = idsOf(box.closest(".group"));
      ids.forEach(function (id) { if (box.checked) { selected.add(id); } else { selected.delete(id); } });
      reconcile();
    } else if (box.id === "select-all") {
      if (box.checked) { selectFrom("", "waiting"); } else { selected.clear(); reconcile(); }
    }
  });

  document.addEventListener("click", function (e) {
    var button = e.target && e.target.closest && e.target.closest("button");
    if (!button) { return; }
    if (button.id === "select-by-add") {
      var choice = document.getElementById("select-by");
      var option = choice && choice.selectedOptions[0];
      if (option && option.value) { selectFrom(option.value, "requests " + (option.dataset.what || "")); }
      else { showCount("choose an agent or a tool first"); }
    } else if (button.id === "select-clear") {
      selected.clear();
      reconcile();
    }
  });

  // Only the ids go: the selected ones, or the group's.
  document.addEventListener("htmx:configRequest", function (e) {
    var elt = e.detail.elt;
    var kind = elt && elt.dataset ? elt.dataset.decide : "";
    if (kind === "selected") {
      e.detail.parameters.ids = Array.from(selected).join(" ");
    } else if (kind === "group") {
      e.detail.parameters.ids = idsOf(elt.closest(".group")).join(" ");
    }
  });

  // The answer to a decision names what it decided and what it settled.
  document.addEventListener("htmx:afterSwap", function (e) {
    if (!e.detail.target || e.detail.target.id !== "decide-feedback") { return; }
    var list = e.detail.target.querySelector(".feedback");
    if (!list) { return; }
    (list.dataset.decided || "").split(" ").forEach(function (id) { if (id) { selected.delete(id); } });
    dropIds((list.dataset.settled || "").split(" ").filter(Boolean));
    reconcile();
  });

  // A request settled that the page counts but does not show (a group's member not
  // opened, a request past what was loaded): nothing to replace, but it leaves its group
  // and the selection (the counts follow once the message is applied).
  document.addEventListener("htmx:oobErrorNoTarget", function (e) {
    var content = e.detail && e.detail.content;
    if (content && content.dataset && content.dataset.request && content.dataset.status !== "pending") {
      dropIds([content.dataset.request]);
    }
  });

  // A "show more" takes the focus to the first thing it brought (its button is gone).
  var more = null;
  function listOf(holder) {
    return holder.classList.contains("more")
      ? document.getElementById("risk-" + holder.id.replace(/^more-/, ""))
      : document.getElementById("members-" + holder.id.replace(/^group-more-/, ""));
  }
  document.addEventListener("htmx:beforeRequest", function (e) {
    var holder = e.detail.elt && e.detail.elt.closest && e.detail.elt.closest(".more, .group-more");
    var list = holder && listOf(holder);
    more = list ? { list: list, count: list.children.length, holder: holder.id } : null;
  });
  document.addEventListener("htmx:afterSettle", function (e) {
    var target = e.detail.target;
    if (more && target && target.id === more.holder) {
      var first = more.list.children[more.count];
      var stop = first && (first.matches(".approval") ? first : first.querySelector(".approval") || first);
      more = null;
      if (stop) {
        if (!stop.hasAttribute("tabindex")) { stop.setAttribute("tabindex", "-1"); }
        stop.focus();
      }
    }
    reconcile();
  });
  document.addEventListener("htmx:wsAfterMessage", reconcile);
  document.addEventListener("DOMContentLoaded", reconcile);
  // A digest's link (?agent=NAME) opens the inbox with that agent's waiting requests
  // selected, ready for one decision; nothing is decided until a person says so.
  document.addEventListener("DOMContentLoaded", function () {
    var agent = new URLSearchParams(location.search).get("agent");
    if (agent && toolbar()) { selectFrom("agent=" + encodeURIComponent(agent), "requests by " + agent); }
  });
})();
