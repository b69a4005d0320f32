// Turns web push on or off for this browser: registers the console's service worker,
// subscribes with the console's public key and sends the subscription to the console.
(() => {
  const on = document.getElementById("push-subscribe");
  const off = document.getElementById("push-unsubscribe");
  const state = document.getElementById("push-state");
  if (!on || !off || !state) return;
  const csrf = () => (document.cookie.match(/(?:^|; )csrftoken=([^;]+)/) || [])[1] || "";

  const key = (text) => {
    const padded = (text + "===".slice((text.length + 3) % 4)).replace(/-/g, "+").replace(/_/g, "/");
    return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
  };
  const send = (method, body) =>
    fetch(on.dataset.url, {
      method,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
      body: JSON.stringify(body),
    });

  if (!("serviceWorker" in navigator) || !("PushManager" in window)) {
    state.textContent = "This browser cannot receive push notifications.";
    on.disabled = true;
    off.disabled = true;
    return;
  }

  on.addEventListener("click", async () => {
    try {
      const registration = await navigator.serviceWorker.register("/service-worker.js", { scope: "/" });
      const subscription = await registration.pushManager.subscribe({
        userVisibleOnly: true,
        applicationServerKey: key(on.dataset.publicKey),
      });
      const answer = await send("POST", subscription.toJSON());
      const body = await answer.json();
      state.textContent = answer.ok
        ? "Push notifications are on for this browser."
        : `Not turned on: ${body.error ? body.error.message : answer.status}`;
    } catch (error) {
      state.textContent = `Not turned on: ${error.message}`;
    }
  });

  off.addEventListener("click", async () => {
    try {
      const registration = await navigator.serviceWorker.getRegistration("/");
      const subscription = registration && (await registration.pushManager.getSubscription());
      if (subscription) {
        await send("DELETE", { endpoint: subscription.endpoint });
        await subscription.unsubscribe();
      }
      state.textContent = "Push notifications are off for this browser.";
    } catch (error) {
      state.textContent = `Not turned off: ${error.message}`;
    }
  });
})();
