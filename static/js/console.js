// Every console page: an answer that refuses or fails is shown where the person acted,
// a signed-out session says so with a link to sign in, and every scroll box can be
// reached by keyboard.
(function () {
  "use strict";
  var LOGIN_PATH = "/accounts/login/";

  // A form's 400 carries the form again with its errors: swap it in, so the message is
  // seen beside the field and a stale preview or Save button goes away. Other failures
  // are not swapped; they are reported beside the control (below).
  function configure() {
    if (!window.htmx) { return; }
    htmx.config.responseHandling = [
      { code: "204", swap: false },
      { code: "[23]..", swap: true },
      { code: "400", swap: true, error: false },
      { code: "422", swap: true, error: false },
      { code: "[45]..", swap: false, error: true },
      { code: "...", swap: false }
    ];
  }
  configure();
  document.addEventListener("DOMContentLoaded", configure);

  function loginLink() {
    var next = encodeURIComponent(location.pathname + location.search);
    return LOGIN_PATH + "?next=" + next;
  }

  // Where a failure is told: the card, form or toolbar the control belongs to.
  function hostOf(elt) {
    return (elt && elt.closest && elt.closest("[data-error-host], .approval, form, .toolbar, .card")) ||
      document.querySelector("main");
  }

  function clearError(host) {
    if (!host) { return; }
    host.querySelectorAll(":scope > .action-error").forEach(function (el) { el.remove(); });
  }

  // The words of a failed answer: the envelope's message, the error page's reason, or
  // the status alone.
  function wordsOf(xhr) {
    if (!xhr || xhr.status === 0) {
      return "The console could not be reached: nothing was decided or saved. Check the connection and try again.";
    }
    var text = xhr.responseText || "";
    try {
      var doc = JSON.parse(text);
      if (doc && doc.error && doc.error.message) { return doc.error.message + " (" + xhr.status + ")"; }
    } catch (ignored) { /* not JSON */ }
    var page = new DOMParser().parseFromString(text, "text/html");
    var reason = page.querySelector(".error-page .reason-given");
    var title = page.querySelector(".error-page h1");
    var said = (reason && reason.textContent.trim()) || (title && title.textContent.trim()) || "";
    if (xhr.status >= 500) {
      return "The console failed to do this (" + xhr.status + "): nothing was changed. Try again; if it keeps failing, tell an admin.";
    }
    return (said || "Refused") + " (" + xhr.status + ")";
  }

  function showError(elt, message, signedOut) {
    var host = hostOf(elt);
    clearError(host);
    var box = document.createElement("p");
    box.className = "action-error";
    box.setAttribute("role", "alert");
    box.textContent = message + " ";
    if (signedOut) {
      var link = document.createElement("a");
      link.href = loginLink();
      link.textContent = "Sign in again";
      box.appendChild(link);
    }
    host.appendChild(box);
    document.dispatchEvent(new CustomEvent("console:action-failed", { detail: { elt: elt, host: host } }));
  }
  window.consoleShowError = showError;

  function signedOut(xhr) {
    if (!xhr) { return false; }
    if (xhr.status === 401) { return true; }
    try {
      return new URL(xhr.responseURL || location.href).pathname === LOGIN_PATH &&
        location.pathname !== LOGIN_PATH;
    } catch (ignored) { return false; }
  }

  document.addEventListener("htmx:beforeRequest", function (e) {
    clearError(hostOf(e.detail.elt));
  });
  // A session that ended is answered by the sign-in page (a redirect the browser followed):
  // never swap that into the page; say it.
  document.addEventListener("htmx:beforeSwap", function (e) {
    if (signedOut(e.detail.xhr)) {
      e.detail.shouldSwap = false;
      e.detail.isError = false;
      showError(e.detail.requestConfig ? e.detail.requestConfig.elt : e.detail.elt,
        "You are signed out: nothing was done.", true);
    }
  });
  document.addEventListener("htmx:responseError", function (e) {
    var xhr = e.detail.xhr;
    var elt = e.detail.requestConfig ? e.detail.requestConfig.elt : e.detail.elt;
    var csrf = xhr && xhr.status === 403 && /older than your session/.test(xhr.responseText || "");
    if (csrf) {
      showError(elt, "You are signed out or signed in elsewhere since this page was loaded: nothing was done.", true);
      return;
    }
    showError(elt, wordsOf(xhr), false);
  });
  document.addEventListener("htmx:sendError", function (e) {
    showError(e.detail.requestConfig ? e.detail.requestConfig.elt : e.detail.elt, wordsOf(null), false);
  });

  // A form that asks before it is sent says what in data-confirm (no inline handler: the
  // page's policy would not run it).
  document.addEventListener("submit", function (e) {
    var form = e.target;
    var question = form && form.getAttribute && form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { e.preventDefault(); }
  }, true);

  // A box that scrolls must take the keyboard's focus, or its end cannot be read without a mouse.
  function reachScrollBoxes(root) {
    (root || document).querySelectorAll("pre, .output, .scroll, table").forEach(function (el) {
      if (el.hasAttribute("tabindex")) { return; }
      if (el.scrollHeight > el.clientHeight + 1 || el.scrollWidth > el.clientWidth + 1) {
        var style = getComputedStyle(el);
        if (/(auto|scroll)/.test(style.overflow + style.overflowX + style.overflowY)) {
          el.setAttribute("tabindex", "0");
        }
      }
    });
  }
  document.addEventListener("DOMContentLoaded", function () { reachScrollBoxes(document); });
  document.addEventListener("htmx:afterSettle", function (e) { reachScrollBoxes(e.detail.elt); });
  window.addEventListener("load", function () { reachScrollBoxes(document); });
})();
