/* The league page: while the league is not finished, fetch the page again every few seconds
 * (data-refresh) and swap in its live part (progress, standings, schedule), as the server
 * rendered it. */
"use strict";

(() => {
  const live = document.getElementById("league-live");
  if (!live || live.dataset.state === "finished") return;

  async function refresh() {
    const res = await fetch(location.pathname, { cache: "no-store" });
    if (!res.ok) return true;
    const doc = new DOMParser().parseFromString(await res.text(), "text/html");
    const fresh = doc.getElementById("league-live");
    if (!fresh) return true;
    if (fresh.innerHTML !== live.innerHTML) live.replaceChildren(...fresh.childNodes);
    live.dataset.state = fresh.dataset.state;
    return fresh.dataset.state !== "finished";
  }

  Cow.poll(refresh, Number(live.dataset.refresh) || 5);
})();
