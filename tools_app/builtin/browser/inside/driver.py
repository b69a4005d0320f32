"""Runs inside the sandbox: start Chromium, drive one page over the DevTools pipe, answer.

Usage: ``python3 -I -S -c SOURCE REQUEST-JSON``, with on stdin axe-core's source for
an accessibility scan, a mockup's HTML or SVG for ``mockup``, or the PNG to keep for
``save`` (a picture the worker made; no browser starts for it). Standard library only:
the console's virtual environment (and Playwright in it) is not visible inside the
sandbox, so the Chrome DevTools Protocol is spoken here directly, over the two descriptors
``--remote-debugging-pipe`` opens (commands on fd 3, answers on fd 4, each message
JSON ended by a NUL byte).

Chromium runs with ``--no-sandbox``: its own sandbox needs user namespaces, which
cannot nest inside ours. The sandbox this script runs in is the wall: its own
network namespace (the egress forwarder on loopback is the only way out), only the
workspace and read-only system directories visible, memory, process and time limits.
Every call gets a fresh profile under the sandbox's private ``/tmp``; extensions and
background networking are off. Downloads are refused, but for ``navigate`` when the
worker allows them: Chromium then writes them into the private ``/tmp`` under names of
its own, bounded in count and bytes here, and they come back on the answer for the
worker to keep in the workspace (``save_downloads``) under its quota.

The answer is one JSON line on stdout: ``{"ok": true, ...}`` or
``{"ok": false, "code": ..., "message": ...}``; exit status 0 either way, or
``TIMEOUT_EXIT`` when the page was not ready within the call's time.
"""

import base64
import contextlib
import errno
import hashlib
import io
import json
import os
import select
import shutil
import signal
import stat
import sys
import tarfile
import tempfile
import time
import unicodedata
from urllib.parse import unquote, urlsplit

TIMEOUT_EXIT = 124
WORKSPACE = "/workspace"
SCREENSHOT_DIR = ".synthorg/screenshots"
DOWNLOAD_DIR = ".synthorg/downloads"
# The longest name a kept download gets (bytes of UTF-8), its extension kept.
DOWNLOAD_NAME_BYTES = 120
# How long a navigation that became a download may take to say so.
DOWNLOAD_BEGIN_SECONDS = 5.0
MOCKUP_DIR = ".synthorg/mockups"
# A mockup is served as this page; the name cannot resolve (.invalid), and every other
# request the mockup makes is failed here before it leaves the browser.
MOCKUP_URL = "http://synthorg-mockup.invalid/"
# The forwarder to the egress proxy listens here (tools_app.egress.mount.FORWARD_PORT).
PROXY_PORT = 3128
START_SECONDS = 20.0
# The egress proxy's refusal of a plain-HTTP request carries its reason in this header.
EGRESS_HEADER = "x-synthorg-egress"

# Marks every text node a person cannot see, blanks it while innerText is read, then
# puts it back. A node is hidden when its element is not rendered or is transparent
# (display, visibility, opacity, checked by checkVisibility), sits under
# aria-hidden, has no box of readable size, lies outside the page or outside every
# clipping ancestor, or is drawn in (about) the colour of what is behind it.
EXTRACT_JS = r"""
(() => {
  const maxText = %(max_text)d, maxLinks = %(max_links)d;
  const root = document.documentElement;
  const body = document.body;
  const pageW = Math.max(root.scrollWidth, body ? body.scrollWidth : 0, innerWidth);
  const pageH = Math.max(root.scrollHeight, body ? body.scrollHeight : 0, innerHeight);
  const shown = (el) => el.checkVisibility({opacityProperty: true, visibilityProperty: true});
  const sx = scrollX, sy = scrollY;
  const rgba = (value) => {
    const m = /rgba?\(([^)]*)\)/.exec(value || "");
    if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(parseFloat);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const backdrop = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.backgroundImage && s.backgroundImage !== "none") return null;
      const c = rgba(s.backgroundColor);
      if (c && c[3] >= 0.5) return c;
    }
    return [255, 255, 255, 1];
  };
  const cache = new Map();
  const elementHidden = (el) => {
    if (cache.has(el)) return cache.get(el);
    let hidden = false;
    const s = getComputedStyle(el);
    if (el.closest('[aria-hidden="true"]')) hidden = true;
    else if (!shown(el)) hidden = true;
    else if (parseFloat(s.fontSize) < 4) hidden = true;
    else if (s.clip === "rect(0px, 0px, 0px, 0px)") hidden = true;
    else if (/inset\((50|100)%%/.test(s.clipPath)) hidden = true;
    else {
      const fg = rgba(s.webkitTextFillColor) || rgba(s.color);
      if (fg && fg[3] < 0.1) hidden = true;
      else if (fg) {
        const bg = backdrop(el);
        const near = (i) => Math.abs(fg[i] - bg[i]) <= 24;
        if (bg && near(0) && near(1) && near(2)) hidden = true;
      }
    }
    cache.set(el, hidden);
    return hidden;
  };
  const boxHidden = (node, el) => {
    const range = document.createRange();
    range.selectNodeContents(node);
    const rects = Array.from(range.getClientRects()).filter((r) => r.width > 1 && r.height > 1);
    if (!rects.length) return true;
    return rects.every((r) => {
      const left = r.left + sx, top = r.top + sy, right = r.right + sx, bottom = r.bottom + sy;
      if (right <= 0 || bottom <= 0 || left >= pageW || top >= pageH) return true;
      // Only boxes a person cannot scroll clip for good (hidden, clip; not auto, scroll).
      for (let e = el; e && e !== root; e = e.parentElement) {
        const s = getComputedStyle(e);
        const clipX = /^(hidden|clip)$/.test(s.overflowX);
        const clipY = /^(hidden|clip)$/.test(s.overflowY);
        if (!clipX && !clipY) continue;
        const c = e.getBoundingClientRect();
        if (clipX && (r.right <= c.left || r.left >= c.right || c.width <= 1)) return true;
        if (clipY && (r.bottom <= c.top || r.top >= c.bottom || c.height <= 1)) return true;
      }
      return false;
    });
  };
  const offPage = (el) => {
    const r = el.getBoundingClientRect();
    const left = r.left + sx, top = r.top + sy;
    return r.right + sx <= 0 || r.bottom + sy <= 0 || left >= pageW || top >= pageH;
  };
  const walker = document.createTreeWalker(document.body || root, NodeFilter.SHOW_TEXT);
  const blanked = [];
  let hiddenChars = 0;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || !node.data.trim()) continue;
    if (["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE"].includes(el.tagName)) continue;
    if (elementHidden(el) || boxHidden(node, el)) {
      hiddenChars += node.data.trim().length;
      blanked.push([node, node.data]);
    }
  }
  const anchors = Array.from(document.querySelectorAll("a[href]"));
  const hadText = new Set(anchors.filter((a) => a.textContent.trim()));
  for (const [node] of blanked) node.data = "";
  const full = body ? body.innerText : "";
  const links = [];
  const seen = new Set();
  for (const a of anchors) {
    if (links.length >= maxLinks) break;
    const url = a.href;
    if (!/^https?:/i.test(url) || seen.has(url)) continue;
    if (a.closest('[aria-hidden="true"]') || !shown(a) || offPage(a)) continue;
    const text = (a.innerText || "").replace(/\s+/g, " ").trim();
    // A link whose every word was hidden is hidden too.
    if (!text && hadText.has(a)) continue;
    const r = a.getBoundingClientRect();
    if (!text && (r.width <= 1 || r.height <= 1)) continue;
    seen.add(url);
    links.push({text: text.slice(0, 500), url: url});
  }
  for (const [node, data] of blanked) node.data = data;
  const text = full.replace(/[ \t]+\n/g, "\n").replace(/\n{3,}/g, "\n\n").trim();
  return {
    title: document.title || "",
    text: text.slice(0, maxText),
    text_truncated: text.length > maxText,
    links: links,
    hidden_chars: hiddenChars,
    final_url: location.href,
  };
})()
"""

# The box of the first element matching a selector, in page coordinates.
BOX_JS = r"""
(() => {
  const el = document.querySelector(%s);
  if (!el) return null;
  const r = el.getBoundingClientRect();
  return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height};
})()
"""

SIZE_JS = r"""
(() => {
  const root = document.documentElement;
  return {
    width: Math.max(root.scrollWidth, document.body ? document.body.scrollWidth : 0),
    height: Math.max(root.scrollHeight, document.body ? document.body.scrollHeight : 0),
  };
})()
"""


# What of an agent's profile is not carried between calls: caches, crash reports, the
# driver's own files and Chromium's single-instance markers.
PROFILE_SKIP_DIRS = frozenset(
    {
        "cache",
        "fontcache",
        "downloads",
        "Cache",
        "Code Cache",
        "GPUCache",
        "GrShaderCache",
        "ShaderCache",
        "GraphiteDawnCache",
        "DawnCache",
        "DawnGraphiteCache",
        "DawnWebGPUCache",
        "Crashpad",
        "Crash Reports",
        # Kept by the state file below instead: the browser writes them late, or not at all
        # when it closes soon after a change.
        "Local Storage",
        "Session Storage",
    }
)
PROFILE_SKIP_FILES = frozenset(
    {
        "chromium.log",
        "fonts.conf",
        "BrowserMetrics-spare.pma",
        os.path.join("Default", "Cookies"),
        os.path.join("Default", "Cookies-journal"),
    }
)
# Cookies and local storage, read from the browser before it closes and given back to
# the next one through the DevTools protocol.
STATE_FILE = "synthorg-state.json"
COOKIE_FIELDS = (
    "name",
    "value",
    "domain",
    "path",
    "secure",
    "httpOnly",
    "sameSite",
    "priority",
    "sourceScheme",
    "sourcePort",
)
# Puts an origin's kept local storage back before the page's own scripts run: once per
# origin and tab (its session storage remembers), so later pages of the same call see
# their own changes.
RESTORE_STORAGE_JS = r"""
(() => {
  const kept = %s;
  const origin = location.protocol === "file:" ? "file://" : location.origin;
  const items = kept[origin];
  if (!items) return;
  try {
    if (sessionStorage.getItem("synthorg:restored")) return;
    sessionStorage.setItem("synthorg:restored", "1");
    for (const [key, value] of items) localStorage.setItem(key, value);
  } catch (e) {}
})()
"""
# A restored profile may unpack to this much at most, in this many entries.
PROFILE_UNPACKED_BYTES = 48 * 1024 * 1024
PROFILE_ENTRIES = 20000
# How long the browser may take to close and write what it holds (cookies) to disk.
CLOSE_SECONDS = 5.0

# open_page's status for a URL that was a file to download rather than a page.
DOWNLOADED = "downloaded"


class Failure(Exception):
    """The call cannot be answered; ``code`` says why in a word an agent can branch on."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


class Timeout(Exception):
    """The page was not ready within the call's time."""


def download_name(suggested):
    """A plain file name for a download from the name the server or page suggested: its
    last part only, without controls, format characters (bidirectional overrides),
    separators or leading dots, cut to ``DOWNLOAD_NAME_BYTES``; ``download`` when
    nothing is left."""
    name = unicodedata.normalize("NFKC", str(suggested))
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    kept = []
    for char in name:
        category = unicodedata.category(char)
        if (category[0] in "CZ" and char != " ") or char in '<>:"|?*':
            kept.append("_")
        else:
            kept.append(char)
    name = "".join(kept).strip(" ._")
    stem, dot, suffix = name.rpartition(".")
    if not dot or not stem or len(suffix.encode()) > 16:
        stem, suffix = name, ""
    room = DOWNLOAD_NAME_BYTES - (len(suffix.encode()) + 1 if suffix else 0)
    stem = stem.encode()[:room].decode("utf-8", "ignore").rstrip(" ._")
    name = f"{stem}.{suffix}" if suffix and stem else stem
    return name or "download"


class Downloads:
    """The files pages download during one call: Chromium writes them into ``folder``
    (the private /tmp) under its own names, never the suggested ones; at most
    ``max_count`` are kept (the rest are cancelled) and together at most ``max_bytes``
    (past it the call fails ``LIMIT_EXCEEDED``: ``why`` names the limit). A ``file:``
    download outside the workspace is refused."""

    def __init__(self, folder, max_count, max_bytes, why):
        self.folder = folder
        self.max_count = max_count
        self.max_bytes = max_bytes
        self.why = why
        self.begun = {}
        self.received = {}
        self.finished = {}
        self.skipped = 0

    @classmethod
    def of(cls, request):
        wanted = request.get("downloads")
        if request["action"] != "navigate" or not wanted or not wanted.get("max_count"):
            return None
        # Beside the profile, never in it: an agent's profile is kept between calls.
        folder = tempfile.mkdtemp(prefix="downloads-")
        return cls(folder, int(wanted["max_count"]), int(wanted["max_bytes"]), wanted["why"])

    def allow(self, pipe):
        pipe.call(
            "Browser.setDownloadBehavior",
            {"behavior": "allowAndName", "downloadPath": self.folder, "eventsEnabled": True},
        )

    def _cancel(self, pipe, guid):
        with contextlib.suppress(Failure):
            pipe.call("Browser.cancelDownload", {"guid": guid})

    def _over(self, pipe, guid):
        self._cancel(pipe, guid)
        name = self.begun.get(guid, {}).get("name", "a file")
        raise Failure(
            "LIMIT_EXCEEDED",
            f"the download of {name} passed {self.max_bytes} bytes, what this call may "
            f"keep ({self.why}); nothing was kept",
        )

    def note(self, pipe, event):
        """Follow one download event; True when it was one."""
        method, params = event.get("method"), event.get("params", {})
        guid = params.get("guid")
        if method == "Browser.downloadWillBegin":
            url = str(params.get("url", ""))
            if url.lower().startswith("file:") and not final_url_allowed(url):
                self._cancel(pipe, guid)
                raise Failure(
                    "PATH_NOT_REACHABLE",
                    "the page asked to download a file outside the workspace",
                )
            if len(self.begun) >= self.max_count:
                self._cancel(pipe, guid)
                self.skipped += 1
                self.finished[guid] = "skipped"
                return True
            suggested = params.get("suggestedFilename") or ""
            self.begun[guid] = {"url": url[:2000], "name": download_name(suggested)}
            return True
        if method != "Browser.downloadProgress" or guid not in self.begun:
            return method == "Browser.downloadProgress"
        # What arrived so far, or what the server announced when that is more.
        self.received[guid] = max(
            int(params.get("receivedBytes") or 0), int(params.get("totalBytes") or 0)
        )
        if sum(self.received.values()) > self.max_bytes:
            self._over(pipe, guid)
        state = params.get("state")
        if state in ("completed", "canceled"):
            self.finished[guid] = state
        return True

    def began(self, pipe, deadline):
        """Whether a download began (a navigation that ended as a file, not a page)."""
        while not any(e.get("method") == "Browser.downloadWillBegin" for e in pipe.events):
            try:
                pipe.events.append(pipe._message(deadline))
            except Timeout:
                return False
        return True

    def _pending(self, pipe):
        for event in list(pipe.events):
            if event.get("method", "").startswith("Browser.download"):
                pipe.events.remove(event)
                self.note(pipe, event)
        return [guid for guid in self.begun if guid not in self.finished]

    def settle(self, pipe):
        """Wait for every begun download to end; the kept ones, each read whole."""
        while self._pending(pipe):
            pipe.events.append(pipe._message(pipe.deadline))
        kept = []
        total = 0
        for guid, begun in self.begun.items():
            if self.finished.get(guid) != "completed":
                raise Failure(
                    "DOWNLOAD_FAILED",
                    f"the download of {begun['name']} from {begun['url'][:200]} did not "
                    "complete (the server ended it, or it did not fit in the browser's "
                    "temporary space)",
                )
            path = os.path.join(self.folder, guid)
            with open(path, "rb") as handle:
                data = handle.read(self.max_bytes + 1)
            total += len(data)
            if total > self.max_bytes:
                self._over(pipe, guid)
            kept.append(dict(begun, data=data))
        return [
            {
                "url": k["url"],
                "name": k["name"],
                "bytes": len(k["data"]),
                "sha256": hashlib.sha256(k["data"]).hexdigest(),
                "data": base64.b64encode(k["data"]).decode("ascii"),
            }
            for k in kept
        ]


def chromium_argv(request, profile):
    argv = [
        request["chromium"],
        "--headless=new",
        # Chromium's own sandbox cannot nest inside this one; ours is the wall.
        "--no-sandbox",
        "--no-zygote",
        "--remote-debugging-pipe",
        "--user-data-dir=" + profile,
        "--disk-cache-dir=" + os.path.join(profile, "cache"),
        "--disk-cache-size=1048576",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--disable-component-extensions-with-background-pages",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-sync",
        "--disable-breakpad",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--mute-audio",
        "--hide-scrollbars",
        "--password-store=basic",
        "--use-mock-keychain",
        "--force-device-scale-factor=1",
        "--disable-features=Translate,MediaRouter,OptimizationHints,HttpsUpgrades,"
        "DialMediaRouteProvider,InterestFeedContentSuggestions",
        "--window-size={},{}".format(request["viewport"]["width"], request["viewport"]["height"]),
    ]
    # Every request goes to the egress forwarder (with no grant, to a closed port: the
    # sandbox has no other way out anyway); "<-loopback>" removes Chromium's implicit
    # direct route to localhost, so loopback pages are judged by the grant too.
    port = PROXY_PORT if request.get("proxy") else 9
    argv += [f"--proxy-server=http://127.0.0.1:{port}", "--proxy-bypass-list=<-loopback>"]
    argv.append("about:blank")
    return argv


def chromium_env(profile):
    fonts = os.path.join(profile, "fonts.conf")
    with open(fonts, "w", encoding="utf-8") as handle:
        handle.write(
            '<?xml version="1.0"?><fontconfig><dir>/usr/share/fonts</dir>'
            f"<cachedir>{os.path.join(profile, 'fontcache')}</cachedir></fontconfig>"
        )
    # A fresh environment: the proxy is given by flag, nothing else of the sandbox's passes.
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": profile,
        "TMPDIR": profile,
        "XDG_CONFIG_HOME": os.path.join(profile, "config"),
        "XDG_CACHE_HOME": os.path.join(profile, "cache"),
        "FONTCONFIG_FILE": fonts,
        "DBUS_SESSION_BUS_ADDRESS": "disabled:",
        "LANG": "C.UTF-8",
    }
    return env


def start(request, profile):
    """Fork Chromium with the DevTools pipe on its fds 3 and 4; (pid, write fd, read fd)."""
    to_browser = os.pipe()
    from_browser = os.pipe()
    log = os.open(os.path.join(profile, "chromium.log"), os.O_WRONLY | os.O_CREAT, 0o600)
    argv = chromium_argv(request, profile)
    env = chromium_env(profile)
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            # Move the pipe ends above 4 first, so placing them on 3 and 4 clobbers neither.
            read_end = os.dup(to_browser[0]) if to_browser[0] <= 4 else to_browser[0]
            write_end = os.dup(from_browser[1]) if from_browser[1] <= 4 else from_browser[1]
            while read_end <= 4:
                read_end = os.dup(read_end)
            while write_end <= 4:
                write_end = os.dup(write_end)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.closerange(5, 65536)
            os.execve(argv[0], argv, env)  # noqa: S606 - a fixed program, argv of words
        finally:
            os._exit(127)
    os.close(to_browser[0])
    os.close(from_browser[1])
    os.close(log)
    return pid, to_browser[1], from_browser[0]


class Pipe:
    """The DevTools protocol over two descriptors, every wait bounded by a deadline."""

    def __init__(self, write_fd, read_fd, deadline):
        self.write_fd = write_fd
        self.read_fd = read_fd
        self.deadline = deadline
        self.buffer = b""
        self.next_id = 0
        self.events = []
        self.load_ms = None
        # The agent's kept local storage ({origin: [[key, value], ...]}) and the page's
        # DevTools session, when its profile is carried.
        self.kept_storage = {}
        self.page_session = None

    def send(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self.write_fd, data) :]
        return self.next_id

    def _message(self, deadline):
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout()
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if not ready:
                raise Timeout()
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise Failure("BROWSER_FAILED", "the browser closed its DevTools pipe")
            self.buffer += chunk
        raw, _, self.buffer = self.buffer.partition(b"\0")
        message = json.loads(raw)
        message["_at"] = time.time()
        return message

    def call(self, method, params=None, session=None, deadline=None):
        ident = self.send(method, params, session)
        while True:
            message = self._message(deadline or self.deadline)
            if message.get("id") == ident:
                if "error" in message:
                    raise Failure(
                        "BROWSER_FAILED",
                        f"{method}: {message['error'].get('message', 'error')}",
                    )
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def wait_event(self, accept, deadline=None):
        """The first event (queued or new) for which ``accept`` is true."""
        while True:
            for index, event in enumerate(self.events):
                if accept(event):
                    del self.events[index]
                    return event
            self.events.append(self._message(deadline or self.deadline))


def evaluate(pipe, session, expression):
    result = pipe.call(
        "Runtime.evaluate",
        {"expression": expression, "returnByValue": True, "awaitPromise": False},
        session,
    )
    if "exceptionDetails" in result:
        detail = result["exceptionDetails"].get("text", "exception")
        raise Failure("BROWSER_FAILED", f"the page script failed: {detail}")
    return result.get("result", {}).get("value")


def final_url_allowed(url):
    """The page the browser ended on is one a call may read (a redirect is checked too)."""
    lowered = url.lower()
    if lowered.startswith(("http://", "https://")):
        return True
    if lowered.startswith("file://"):
        path = url[len("file://") :].split("?", 1)[0].split("#", 1)[0]
        real = os.path.realpath(unquote(path))
        return real == WORKSPACE or real.startswith(WORKSPACE + "/")
    return False


def open_page(pipe, request, downloads=None):
    """A new tab, its session, and the navigation done; (session, status). The status is
    ``DOWNLOADED`` when the URL was a file the browser downloads (with ``downloads``)."""
    target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    if downloads is None:
        pipe.call("Browser.setDownloadBehavior", {"behavior": "deny"})
    else:
        downloads.allow(pipe)
    if request.get("profile"):
        # The origins whose local storage a page touches are followed, to keep it.
        pipe.call("DOMStorage.enable", {}, session)
        pipe.page_session = session
        if pipe.kept_storage:
            source = RESTORE_STORAGE_JS % json.dumps(pipe.kept_storage)
            pipe.call("Page.addScriptToEvaluateOnNewDocument", {"source": source}, session)
    pipe.call("Page.enable", {}, session)
    pipe.call("Network.enable", {}, session)
    pipe.call("Page.setLifecycleEventsEnabled", {"enabled": True}, session)
    if request.get("console"):
        # Console messages and uncaught exceptions, for the spec check that counts them.
        pipe.call("Runtime.enable", {}, session)
        pipe.call("Log.enable", {}, session)
    viewport = request["viewport"]
    pipe.call(
        "Emulation.setDeviceMetricsOverride",
        {
            "width": viewport["width"],
            "height": viewport["height"],
            "deviceScaleFactor": 1,
            "mobile": False,
        },
        session,
    )
    # The blank page the tab opened with has its own lifecycle (networkIdle too) under
    # its own loader: only what comes after it counts.
    blank = pipe.call("Page.getFrameTree", {}, session)["frameTree"]["frame"].get("loaderId")
    navigation_started = time.monotonic()
    navigated = pipe.call("Page.navigate", {"url": request["url"]}, session)
    if navigated.get("errorText"):
        # A file to download ends its navigation (net::ERR_ABORTED) as the download begins.
        began = min(pipe.deadline, time.monotonic() + DOWNLOAD_BEGIN_SECONDS)
        if downloads is not None and downloads.began(pipe, began):
            pipe.load_ms = int((time.monotonic() - navigation_started) * 1000)
            return session, DOWNLOADED
        raise Failure(
            "NAVIGATION_FAILED",
            f"the browser could not load {request['url']}: {navigated['errorText']} (a host "
            "outside the agent's network grant is refused by the egress proxy)",
        )
    frame = navigated.get("frameId")
    wanted = {
        "load": lambda e: e.get("method") == "Page.loadEventFired",
        "domcontentloaded": lambda e: e.get("method") == "Page.domContentEventFired",
        "networkidle": lambda e: (
            e.get("method") == "Page.lifecycleEvent"
            and e.get("params", {}).get("name") == "networkIdle"
            and e.get("params", {}).get("frameId") == frame
            and e.get("params", {}).get("loaderId") != blank
        ),
    }[request["wait_until"]]
    pipe.wait_event(lambda e: e.get("sessionId") == session and wanted(e))
    pipe.load_ms = int((time.monotonic() - navigation_started) * 1000)
    status = None
    for event in pipe.events:
        params = event.get("params", {})
        if (
            event.get("method") == "Network.responseReceived"
            and params.get("type") == "Document"
            and params.get("frameId") == frame
        ):
            response = params.get("response", {})
            status = response.get("status")
            headers = {str(k).lower(): v for k, v in (response.get("headers") or {}).items()}
            if EGRESS_HEADER in headers:
                raise Failure(
                    "NAVIGATION_FAILED",
                    f"the egress proxy refused {response.get('url', request['url'])}: "
                    f"{headers[EGRESS_HEADER]}",
                )
    return session, status


def navigate(pipe, request, downloads=None):
    session, status = open_page(pipe, request, downloads)
    if status == DOWNLOADED:
        return {
            "final_url": request["url"],
            "status": None,
            "title": "",
            "text": "",
            "text_truncated": False,
            "links": [],
            "hidden_text_removed": False,
            "downloads": downloads.settle(pipe),
            "downloads_skipped": downloads.skipped,
        }
    page = evaluate(
        pipe,
        session,
        EXTRACT_JS % {"max_text": request["max_text_chars"], "max_links": request["max_links"]},
    )
    if not final_url_allowed(page["final_url"]):
        raise Failure("PATH_NOT_REACHABLE", "the page moved to a location outside the workspace")
    return {
        "final_url": page["final_url"],
        "status": int(status) if isinstance(status, (int, float)) else None,
        "title": page["title"],
        "text": page["text"],
        "text_truncated": bool(page["text_truncated"]),
        "links": page["links"],
        "hidden_text_removed": page["hidden_chars"] > 0,
        "downloads": downloads.settle(pipe) if downloads is not None else [],
        "downloads_skipped": downloads.skipped if downloads is not None else 0,
    }


def png_size(data):
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise Failure("BROWSER_FAILED", "the browser's screenshot is not a PNG")
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def screenshot_dir(folder=SCREENSHOT_DIR):
    """``folder`` (``.synthorg/screenshots``) in the workspace, made here; a link on the way
    is refused."""
    path = WORKSPACE
    for part in folder.split("/"):
        path = os.path.join(path, part)
        try:
            os.mkdir(path, 0o755)
        except FileExistsError:
            pass
        except OSError as exc:
            raise Failure("WORKSPACE_NOT_WRITABLE", f"cannot make {path}: {exc.strerror}") from None
        if not os.path.isdir(path) or os.path.islink(path):
            raise Failure("PATH_NOT_REACHABLE", f"{path} is not a plain directory")
    return path


def screenshot(pipe, request):
    session, status = open_page(pipe, request)
    location = evaluate(pipe, session, "location.href")
    if not final_url_allowed(location):
        raise Failure("PATH_NOT_REACHABLE", "the page moved to a location outside the workspace")
    params: dict = {"format": "png"}
    if request.get("selector"):
        box = evaluate(pipe, session, BOX_JS % json.dumps(request["selector"]))
        if not box or box["width"] < 1 or box["height"] < 1:
            raise Failure("SELECTOR_NOT_FOUND", "no visible element matches the selector")
        params["clip"] = dict(box, scale=1)
        params["captureBeyondViewport"] = True
    elif request.get("full_page"):
        size = evaluate(pipe, session, SIZE_JS)
        height = min(int(size["height"]), request["max_full_page_height"])
        params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": height, "scale": 1}
        params["captureBeyondViewport"] = True
    encoded = pipe.call("Page.captureScreenshot", params, session)["data"]
    data = base64.b64decode(encoded)
    if request.get("keep", True):
        stored = store_png(data, "")
    else:
        # The worker keeps it: Chromium ran without a writable workspace (the quota's file
        # size limit would cut the browser's own shared memory short).
        width, height = png_size(data)
        stored = {
            "png": encoded,
            "sha256": hashlib.sha256(data).hexdigest(),
            "width": width,
            "height": height,
        }
    stored.update(
        status=int(status) if isinstance(status, (int, float)) else None, final_url=location
    )
    return stored


def write_whole(fd, path, data, what="the picture"):
    """Write ``data`` to the new file ``fd``; a file the workspace quota (the call's file
    size limit) cannot hold is removed, never left cut short."""
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(path)
        if exc.errno in (errno.EFBIG, errno.ENOSPC, errno.EDQUOT):
            raise Failure(
                "LIMIT_EXCEEDED",
                f"{what} ({len(data)} bytes) does not fit in what the workspace quota "
                "(sandboxing.workspace_quota) has left; delete files to make room",
            ) from None
        raise Failure("WORKSPACE_NOT_WRITABLE", f"cannot write {path}: {exc.strerror}") from None


def store_png(data, label, folder=SCREENSHOT_DIR):
    """Save a PNG under ``folder``, named by time and digest; where it is."""
    width, height = png_size(data)
    digest = hashlib.sha256(data).hexdigest()
    name = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{label}{digest[:12]}.png"
    path = os.path.join(screenshot_dir(folder), name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        fd = None  # the same picture taken in the same second: it is already there
    except OSError as exc:
        raise Failure("WORKSPACE_NOT_WRITABLE", f"cannot write {path}: {exc.strerror}") from None
    if fd is not None:
        write_whole(fd, path, data)
    return {
        "path": os.path.relpath(path, WORKSPACE),
        "sha256": digest,
        "width": width,
        "height": height,
    }


def store_downloads(files, data):
    """Save each of ``files`` (``{name, bytes, sha256}``, their contents one after the
    other in ``data``) under ``DOWNLOAD_DIR`` by its plain name, or the name with the
    digest's start when that is taken; never over a file, never through a link."""
    if sum(int(f["bytes"]) for f in files) != len(data):
        raise Failure("INVALID_ARGUMENT", "the downloads' sizes do not add up")
    folder = screenshot_dir(DOWNLOAD_DIR)
    kept = []
    offset = 0
    for entry in files:
        content = data[offset : offset + int(entry["bytes"])]
        offset += len(content)
        digest = hashlib.sha256(content).hexdigest()
        if digest != entry["sha256"]:
            raise Failure("INVALID_ARGUMENT", "a download is not the one the browser took")
        name = download_name(entry["name"])
        stem, dot, suffix = name.rpartition(".")
        tagged = f"{stem}-{digest[:12]}.{suffix}" if dot and stem else f"{name}-{digest[:12]}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        for candidate in (name, tagged):
            path = os.path.join(folder, candidate)
            try:
                fd = os.open(path, flags, 0o644)
            except FileExistsError:
                continue
            except OSError as exc:
                raise Failure(
                    "WORKSPACE_NOT_WRITABLE", f"cannot write {path}: {exc.strerror}"
                ) from None
            write_whole(fd, path, content, what=f"the download {name}")
            break
        # Both names taken: the tagged one holds these bytes already (the worker checks).
        kept.append({"path": os.path.relpath(path, WORKSPACE), "sha256": digest})
    return kept


def mockup(pipe, request, content):
    """Draw ``content`` (HTML or SVG) as the only page there is: scripts off, every other
    request the page makes failed and reported; the PNG of the viewport answered."""
    target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    pipe.call("Browser.setDownloadBehavior", {"behavior": "deny"})
    pipe.call("Page.enable", {}, session)
    pipe.call("Fetch.enable", {"patterns": [{"urlPattern": "*"}]}, session)
    pipe.call("Emulation.setScriptExecutionDisabled", {"value": True}, session)
    viewport = request["viewport"]
    pipe.call(
        "Emulation.setDeviceMetricsOverride",
        {
            "width": viewport["width"],
            "height": viewport["height"],
            "deviceScaleFactor": 1,
            "mobile": False,
        },
        session,
    )
    body = base64.b64encode(content).decode("ascii")
    headers = [{"name": "Content-Type", "value": request["content_type"]}]
    blocked: list = []
    served = False
    pipe.send("Page.navigate", {"url": MOCKUP_URL}, session)
    while True:
        event = pipe.wait_event(
            lambda e: (
                e.get("sessionId") == session
                and e.get("method") in ("Fetch.requestPaused", "Page.loadEventFired")
            )
        )
        if event["method"] == "Page.loadEventFired":
            break
        params = event["params"]
        url = str(params.get("request", {}).get("url", ""))
        if url == MOCKUP_URL and not served:
            served = True
            pipe.call(
                "Fetch.fulfillRequest",
                {
                    "requestId": params["requestId"],
                    "responseCode": 200,
                    "responseHeaders": headers,
                    "body": body,
                },
                session,
            )
            continue
        pipe.call(
            "Fetch.failRequest",
            {"requestId": params["requestId"], "errorReason": "BlockedByClient"},
            session,
        )
        if len(blocked) < request["max_blocked"]:
            kind = str(params.get("resourceType", "Other"))
            blocked.append({"url": url[:500], "resource_type": kind})
    if not served:
        raise Failure("BROWSER_FAILED", "the browser did not ask for the mockup")
    encoded = pipe.call("Page.captureScreenshot", {"format": "png"}, session)["data"]
    data = base64.b64decode(encoded)
    # The worker keeps it: Chromium ran with the workspace read-only.
    width, height = png_size(data)
    return {
        "png": encoded,
        "sha256": hashlib.sha256(data).hexdigest(),
        "width": width,
        "height": height,
        "blocked_requests": blocked,
    }


# axe-core's verdict, cut to what an agent reads: each violated rule with the first
# elements it found. Frames are left out: axe is not injected into them.
AXE_RUN_JS = r"""
(async () => {
  const tags = %(tags)s, maxRules = %(max_rules)d, maxNodes = %(max_nodes)d;
  const options = {resultTypes: ["violations"], iframes: false};
  if (tags.length) options.runOnly = {type: "tag", values: tags};
  const result = await axe.run(document, options);
  return result.violations.slice(0, maxRules).map((v) => ({
    id: String(v.id),
    impact: v.impact || null,
    help: String(v.help || ""),
    node_count: v.nodes.length,
    nodes: v.nodes.slice(0, maxNodes).map((n) => ({
      target: (n.target || []).map(String).join(" ").slice(0, 300),
      html: String(n.html || "").slice(0, 300),
    })),
  }));
})()
"""

# The page-side checks of browser_spec, each answered {passed, detail}; a selector the
# browser cannot parse fails its check rather than the call.
SPEC_JS = r"""
((checks) => checks.map((c) => {
  let matches;
  try {
    matches = c.selector ? Array.from(document.querySelectorAll(c.selector)) : null;
  } catch (e) {
    return {passed: false, detail: "the selector is not valid CSS"};
  }
  const first = matches ? matches[0] : null;
  const none = {passed: false, detail: "no element matches the selector"};
  if (c.kind === "selector") {
    return {passed: matches.length > 0, detail: matches.length + " element(s) match"};
  }
  if (c.kind === "visible") {
    if (!first) return none;
    const r = first.getBoundingClientRect();
    const seen = first.checkVisibility({opacityProperty: true, visibilityProperty: true})
      && r.width >= 1 && r.height >= 1;
    return {passed: seen, detail: seen ? "visible" : "present but not visible"};
  }
  if (c.kind === "text") {
    const element = c.selector ? first : document.body;
    if (!element) return none;
    const text = (element.innerText || "").replace(/\s+/g, " ");
    const found = text.includes(c.contains);
    return {passed: found, detail: found ? "the text is there" : "the text is not there"};
  }
  if (c.kind === "attribute") {
    if (!first) return none;
    const value = first.getAttribute(c.name);
    if (value === null) return {passed: false, detail: "the element has no such attribute"};
    const shown = JSON.stringify(value.slice(0, 200));
    return {passed: value === c.equals, detail: "the attribute is " + shown};
  }
  return {passed: false, detail: "unknown check"};
}))(%s)
"""
PAGE_CHECKS = ("selector", "visible", "text", "attribute")


def isolated_world(pipe, session):
    """A script world over the page's DOM that the page's own scripts cannot reach, so
    they can neither replace what a check calls nor see what it runs."""
    frame = pipe.call("Page.getFrameTree", {}, session)["frameTree"]["frame"]["id"]
    created = pipe.call(
        "Page.createIsolatedWorld",
        {"frameId": frame, "worldName": "synthorg-checks", "grantUniveralAccess": False},
        session,
    )
    return created["executionContextId"]


def evaluate_in(pipe, session, context, expression, wait=False):
    result = pipe.call(
        "Runtime.evaluate",
        {
            "expression": expression,
            "contextId": context,
            "returnByValue": True,
            "awaitPromise": wait,
        },
        session,
    )
    if "exceptionDetails" in result:
        details = result["exceptionDetails"]
        detail = details.get("exception", {}).get("description") or details.get("text")
        raise Failure("BROWSER_FAILED", f"the check script failed: {str(detail)[:300]}")
    return result.get("result", {}).get("value")


def accessibility_scan(pipe, request, axe_source):
    session, status = open_page(pipe, request)
    location = evaluate(pipe, session, "location.href")
    if not final_url_allowed(location):
        raise Failure("PATH_NOT_REACHABLE", "the page moved to a location outside the workspace")
    context = isolated_world(pipe, session)
    evaluate_in(pipe, session, context, axe_source)
    script = AXE_RUN_JS % {
        "tags": json.dumps(request.get("tags") or []),
        "max_rules": request["max_violations"],
        "max_nodes": request["max_nodes"],
    }
    violations = evaluate_in(pipe, session, context, script, wait=True)
    return {
        "violations": violations,
        "final_url": location,
        "status": int(status) if isinstance(status, (int, float)) else None,
    }


def console_errors(pipe, session):
    """What the page reported as errors so far: console.error, uncaught exceptions, and
    the browser's own error entries (a resource that failed to load, but for the
    favicon, which the browser fetches of its own accord)."""
    found = []
    for event in pipe.events:
        if event.get("sessionId") != session:
            continue
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            words = [str(a.get("value", a.get("description", ""))) for a in params.get("args", [])]
            found.append(" ".join(words))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            found.append(
                str(details.get("exception", {}).get("description") or details.get("text"))
            )
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            # The browser asks for /favicon.ico on its own; the page did not.
            if urlsplit(str(entry.get("url", ""))).path == "/favicon.ico":
                continue
            found.append(str(entry.get("text", "")))
    return [text[:300] for text in found]


def spec(pipe, request):
    session, status = open_page(pipe, request)
    location = evaluate(pipe, session, "location.href")
    if not final_url_allowed(location):
        raise Failure("PATH_NOT_REACHABLE", "the page moved to a location outside the workspace")
    checks = request["checks"]
    page_checks = [c for c in checks if c["kind"] in PAGE_CHECKS]
    context = isolated_world(pipe, session)
    page_verdicts = iter(evaluate_in(pipe, session, context, SPEC_JS % json.dumps(page_checks)))
    errors = console_errors(pipe, session)
    status = int(status) if isinstance(status, (int, float)) else None
    verdicts = []
    for check in checks:
        kind = check["kind"]
        if kind in PAGE_CHECKS:
            verdict = next(page_verdicts)
        elif kind == "status":
            verdict = {"passed": status == check["equals"], "detail": f"the status is {status}"}
        elif kind == "no_console_errors":
            detail = f"{len(errors)} error(s)" + (": " + errors[0] if errors else "")
            verdict = {"passed": not errors, "detail": detail}
        else:  # max_load_ms
            verdict = {
                "passed": pipe.load_ms <= check["ms"],
                "detail": f"the page loaded in {pipe.load_ms} ms",
            }
        verdicts.append(
            {"kind": kind, "passed": bool(verdict["passed"]), "detail": verdict["detail"]}
        )
    return {"checks": verdicts, "final_url": location, "status": status, "load_ms": pipe.load_ms}


def restore_profile(blob, profile):
    """Unpack an agent's profile (a gzip tar made by ``pack_profile``) into ``profile``:
    plain files and directories only, every name relative and without ``..``, bounded in
    size and count. The tar comes from an earlier call's sandbox, so it is checked here,
    never trusted."""
    total = 0
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        for count, member in enumerate(tar):
            if count >= PROFILE_ENTRIES:
                raise Failure("PROFILE", "too many entries")
            parts = member.name.split("/")
            if member.name.startswith("/") or any(p in ("", ".", "..") for p in parts):
                raise Failure("PROFILE", f"an entry named {member.name[:100]!r}")
            target = os.path.join(profile, *parts)
            if member.isdir():
                os.makedirs(target, 0o700, exist_ok=True)
                continue
            if not member.isreg():
                continue
            total += member.size
            if total > PROFILE_UNPACKED_BYTES:
                raise Failure("PROFILE", "it unpacks to more than its ceiling")
            os.makedirs(os.path.dirname(target), 0o700, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            source = tar.extractfile(member)
            if source is None:
                continue
            with os.fdopen(os.open(target, flags, 0o600), "wb") as out:
                shutil.copyfileobj(source, out)


def pack_profile(profile):
    """The profile's files, caches and markers left out, as a gzip tar."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as tar:
        for root, dirs, files in os.walk(profile):
            dirs[:] = sorted(d for d in dirs if d not in PROFILE_SKIP_DIRS)
            for name in sorted(files):
                path = os.path.join(root, name)
                relative = os.path.relpath(path, profile)
                if relative in PROFILE_SKIP_FILES or name.startswith("Singleton"):
                    continue
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    continue
                tar.add(path, arcname=relative, recursive=False)
    return buffer.getvalue()


def restore_state(pipe, profile):
    """Give the browser the cookies kept in the profile, and keep its local storage for
    the page to restore."""
    try:
        with open(os.path.join(profile, STATE_FILE), encoding="utf-8") as handle:
            state = json.load(handle)
    except (OSError, ValueError):
        return
    cookies = [
        {k: c[k] for k in COOKIE_FIELDS if k in c}
        | ({"expires": c["expires"]} if not c.get("session") and "expires" in c else {})
        for c in state.get("cookies", [])
        if isinstance(c, dict) and "name" in c and "value" in c
    ]
    if cookies:
        pipe.call("Storage.setCookies", {"cookies": cookies})
    kept = state.get("local_storage")
    if isinstance(kept, dict):
        pipe.kept_storage = {
            str(origin): [[str(k), str(v)] for k, v in items]
            for origin, items in kept.items()
            if isinstance(items, list)
        }


def save_state(pipe, profile, deadline):
    """Write the browser's cookies and the local storage of every origin the call's
    page touched (and those it was given) into the profile."""
    cookies = pipe.call("Storage.getCookies", {}, deadline=deadline).get("cookies", [])
    kept = dict(pipe.kept_storage)
    touched = {}
    for event in pipe.events:
        storage = event.get("params", {}).get("storageId", {})
        if str(event.get("method", "")).startswith("DOMStorage.") and storage.get("isLocalStorage"):
            touched[storage.get("securityOrigin") or storage.get("storageKey")] = storage
        if event.get("method") == "Page.frameNavigated":
            origin = event.get("params", {}).get("frame", {}).get("securityOrigin")
            if origin and origin != "://":
                touched.setdefault(origin, {"securityOrigin": origin, "isLocalStorage": True})
    for origin in kept:
        touched.setdefault(origin, {"securityOrigin": origin, "isLocalStorage": True})
    if pipe.page_session is not None:
        for origin, storage in touched.items():
            if not origin:
                continue
            try:
                items = pipe.call(
                    "DOMStorage.getDOMStorageItems",
                    {"storageId": storage},
                    pipe.page_session,
                    deadline=deadline,
                ).get("entries", [])
            except Failure:
                continue
            kept[origin.rstrip("/") if origin != "file://" else origin] = items
    state = {"cookies": cookies, "local_storage": {o: i for o, i in kept.items() if i}}
    with open(os.path.join(profile, STATE_FILE), "w", encoding="utf-8") as handle:
        json.dump(state, handle)


def close_browser(pipe, pid):
    """Ask the browser to close, so it writes what it holds (cookies) into the profile;
    True once it has exited."""
    deadline = time.monotonic() + CLOSE_SECONDS
    with contextlib.suppress(OSError):
        pipe.send("Browser.close")
    exited = False
    while time.monotonic() < deadline:
        if not exited:
            try:
                exited = os.waitpid(pid, os.WNOHANG)[0] != 0
            except ChildProcessError:
                exited = True
        if exited:
            # Its helpers (the storage service among them) write until they end too.
            try:
                os.killpg(pid, 0)
            except ProcessLookupError:
                return True
        time.sleep(0.02)
    return False


def keep_profile(pipe, pid, profile, limit):
    """What the answer carries of the agent's profile: the packed profile, or why not."""
    try:
        save_state(pipe, profile, time.monotonic() + CLOSE_SECONDS)
    except (Failure, Timeout, OSError) as exc:
        detail = exc.message if isinstance(exc, Failure) else type(exc).__name__
        return {"profile_note": f"the browser's cookies could not be read ({detail}); "
                "the profile was not kept"}  # fmt: skip
    if not close_browser(pipe, pid):
        return {"profile_note": "the browser did not close in time; the profile was not kept"}
    packed = pack_profile(profile)
    if len(packed) > limit:
        return {
            "profile_note": f"the profile packed to {len(packed)} bytes, over "
            f"browser.profile_max_mb ({limit} bytes); the next call starts afresh",
            "profile": "",
        }
    return {"profile": base64.b64encode(packed).decode("ascii")}


def stop(pid, pipe_fds):
    for fd in pipe_fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.waitpid(pid, 0)


def log_tail(profile):
    try:
        with open(os.path.join(profile, "chromium.log"), "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 1500))
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    wanted = [line for line in lines if "dbus" not in line and "crashpad" not in line]
    return " | ".join(wanted[-4:])


def main():
    request = json.loads(sys.argv[1])
    started = time.monotonic()
    if request["action"] == "save_downloads":
        # Files the browser downloaded in a call before, kept as the sandbox's user.
        try:
            files = store_downloads(request["files"], sys.stdin.buffer.read())
            answer({"ok": True, "files": files})
        except Failure as exc:
            answer({"ok": False, "code": exc.code, "message": exc.message})
        return 0
    if request["action"] == "save":
        # A picture made by the worker (a diff), saved as the sandbox's user: no browser.
        try:
            label = request.get("label", "diff-")
            if label not in ("", "diff-", "candidate-"):
                raise Failure("INVALID_ARGUMENT", "unknown picture label")
            answer(dict(store_png(sys.stdin.buffer.read(), label), ok=True))
        except Failure as exc:
            answer({"ok": False, "code": exc.code, "message": exc.message})
        return 0
    if not os.access(request["chromium"], os.X_OK):
        missing = f"Chromium is not installed in the sandbox ({request['chromium']})"
        answer({"ok": False, "code": "BROWSER_UNAVAILABLE", "message": missing})
        return 0
    # The agent's profile (browser.profile: per_agent_session) arrives first on stdin.
    carried = request.get("profile")
    blob = sys.stdin.buffer.read(int(carried["bytes"])) if carried else b""
    # axe-core arrives on stdin: the worker read it from the console's vendored copy.
    axe_source = (
        sys.stdin.buffer.read().decode("utf-8") if request["action"] == "accessibility_scan" else ""
    )
    # A mockup's HTML or SVG arrives on stdin too.
    content = sys.stdin.buffer.read() if request["action"] == "mockup" else b""
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    restored = {}
    if blob:
        try:
            restore_profile(blob, profile)
        except (Failure, OSError, tarfile.TarError, EOFError, ValueError) as exc:
            shutil.rmtree(profile, ignore_errors=True)
            profile = tempfile.mkdtemp(prefix="chromium-profile-")
            detail = exc.message if isinstance(exc, Failure) else type(exc).__name__
            restored = {"profile_note": f"the agent's profile could not be restored "
                        f"({detail}); this call started afresh"}  # fmt: skip
    downloads = Downloads.of(request)
    pid, write_fd, read_fd = start(request, profile)
    pipe = Pipe(write_fd, read_fd, started + START_SECONDS)
    try:
        try:
            # The browser's first answer bounds its start-up separately from the page.
            pipe.call("Browser.getVersion", deadline=started + START_SECONDS)
        except (Timeout, Failure):
            raise Failure(
                "BROWSER_FAILED", f"Chromium did not start: {log_tail(profile) or 'no output'}"
            ) from None
        if carried is not None:
            restore_state(pipe, profile)
        # The call's time is the page's: it starts once the browser answers.
        pipe.deadline = time.monotonic() + float(request["timeout_seconds"])
        if request["action"] == "screenshot":
            result = screenshot(pipe, request)
        elif request["action"] == "accessibility_scan":
            result = accessibility_scan(pipe, request, axe_source)
        elif request["action"] == "spec":
            result = spec(pipe, request)
        elif request["action"] == "mockup":
            result = mockup(pipe, request, content)
        else:
            result = navigate(pipe, request, downloads)
        result.update(restored)
        if carried is not None:
            result.update(keep_profile(pipe, pid, profile, int(carried["max_bytes"])))
        result.update(ok=True, elapsed_ms=int((time.monotonic() - started) * 1000))
        answer(result)
        code = 0
    except Timeout:
        late = f"the page was not ready within {request['timeout_seconds']:g}s"
        answer({"ok": False, "code": "TIMED_OUT", "message": late})
        code = TIMEOUT_EXIT
    except Failure as exc:
        answer({"ok": False, "code": exc.code, "message": exc.message})
        code = 0
    except Exception as exc:  # any other failure is answered, not dumped as a traceback
        answer({"ok": False, "code": "BROWSER_FAILED", "message": f"{type(exc).__name__}: {exc}"})
        code = 0
    finally:
        stop(pid, (write_fd, read_fd))
        shutil.rmtree(profile, ignore_errors=True)
        if downloads is not None:
            shutil.rmtree(downloads.folder, ignore_errors=True)
    return code


def answer(payload):
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
