/* The table of a match against the bots (/play/{id}).  The page is rendered on the server
 * with a form per decision; this script only polls /play/{id}/state (the session cookie,
 * same origin) and reloads the page when the decision asked or the match's status changes,
 * so the next decision shows without waiting for the no-script refresh.  It stops once the
 * match is over (or a decision is being sent), and backs off while the server does not
 * answer. */
"use strict";

(() => {
  const box = document.getElementById("play");
  if (!box) return;
  const id = box.dataset.play;
  const seen = box.dataset.decision + "/" + box.dataset.asked + "/" + box.dataset.status;
  if (box.dataset.status === "finished" || box.dataset.status === "failed") return;
  let wait = 400;
  // A decision being sent navigates on its own: a reload now would cancel it.
  let leaving = false;
  const form = document.getElementById("move-form");
  if (form) form.addEventListener("submit", () => (leaving = true));

  async function poll() {
    if (leaving) return;
    try {
      const r = await fetch("/play/" + encodeURIComponent(id) + "/state", {
        credentials: "same-origin",
        cache: "no-store",
      });
      if (r.ok) {
        const s = await r.json();
        const now = s.decision + "/" + (s.asked || "") + "/" + s.status;
        if (now !== seen && !leaving) {
          window.location.reload();
          return;
        }
        wait = 400;
      } else {
        wait = Math.min(wait * 2, 10000);
      }
    } catch (e) {
      wait = Math.min(wait * 2, 10000);
    }
    setTimeout(poll, wait);
  }
  setTimeout(poll, wait);
})();
