// The console's service worker: it shows what a push carries and opens its link.
// A push is JSON {title, body, url, tag}; the url is a page of this console.
self.addEventListener("push", (event) => {
  let message = {};
  try {
    message = event.data ? event.data.json() : {};
  } catch (error) {
    message = { title: "SynthOrg Console", body: event.data ? event.data.text() : "" };
  }
  const url = new URL(message.url || "/approvals/", self.location.origin);
  // Only a page of this console is opened from a notification.
  const target = url.origin === self.location.origin ? url.href : "/approvals/";
  event.waitUntil(
    self.registration.showNotification(message.title || "SynthOrg Console", {
      body: message.body || "",
      tag: message.tag || undefined,
      data: { url: target },
    })
  );
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const url = (event.notification.data && event.notification.data.url) || "/approvals/";
  event.waitUntil(self.clients.openWindow(url));
});
