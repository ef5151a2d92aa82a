/* The ladder page: refresh the leaderboard, the latest matches and the activity line from
 * the JSON API every few seconds (data-refresh) while the tab is visible.  The server has
 * rendered the same tables, so the page works without this script. */
"use strict";

(() => {
  const table = document.getElementById("leaderboard");
  if (!table) return;
  const { el, num, percent } = Cow;
  const id = table.dataset.ladder;
  const every = Number(table.dataset.refresh) || 5;
  const status = document.getElementById("leaderboard-status");
  const activity = document.getElementById("ladder-activity");
  const recent = document.getElementById("recent-matches");
  // "Updated 12:00:05" changes every few seconds and is not news: it is not a live region.
  // Screen readers hear #leaderboard-news, written only when the board itself changed (its
  // order or its matches played) or the refresh starts or stops failing.
  const news = document.getElementById("leaderboard-news");
  let shown = null;
  let failing = false;

  function announce(text) {
    if (news && news.textContent !== text) news.textContent = text;
  }

  function signature(board) {
    return board.items.map((r) => r.agent_id + ":" + r.matches).join(",");
  }

  // The signed-in user's agents are highlighted: the server marks them on a page rendered
  // for the session (data-me); a browser signed in with a saved token only asks the API.
  let me = table.dataset.me ? Number(table.dataset.me) : null;

  function row(r) {
    const mine = me !== null && r.owner_id === me;
    return el(
      "tr",
      { "data-agent": r.agent_id, class: mine ? "mine" : null },
      el("td", { class: "n rank" }, r.rank, Cow.rankChange(r.rank_change)),
      el(
        "td",
        { class: "agent" },
        el("a", { href: "/agents/" + r.agent_id }, r.agent),
        mine ? [" ", Cow.badge("yours")] : null,
      ),
      el("td", { class: "opt" }, r.owner),
      el("td", { class: "opt" }, "v" + r.version),
      el("td", { class: "n opt" }, num(r.mu)),
      el("td", { class: "n opt" }, num(r.sigma)),
      el("td", { class: "n conservative" }, el("strong", {}, num(r.conservative))),
      el("td", { class: "n" }, r.matches),
      el("td", { class: "n" }, percent(r.win_rate)),
      el("td", { class: "n" }, num(r.heads_per_round)),
      el("td", { class: "n" }, percent(r.fault_rate)),
      el("td", { class: "when" }, Cow.when(r.last_played_at)),
    );
  }

  async function refresh() {
    const base = "/api/matches?ladder_id=" + id;
    try {
      const [board, latest, running, queued] = await Promise.all([
        Cow.api("/api/ladders/" + id + "/leaderboard?limit=200", { auth: false }),
        Cow.api(base + "&limit=15", { auth: false }),
        Cow.api(base + "&status=running&limit=1", { auth: false }),
        Cow.api(base + "&status=queued&limit=1", { auth: false }),
      ]);
      const rows = board.items.map(row);
      table.tBodies[0].replaceChildren(
        ...(rows.length ? rows : [Cow.emptyRow("Nobody has entered yet.", 12)]),
      );
      if (recent) {
        const ms = latest.items.map(Cow.matchRow);
        recent.tBodies[0].replaceChildren(...(ms.length ? ms : [Cow.emptyRow("No matches yet.", 5)]));
      }
      if (activity) {
        activity.dataset.running = running.total;
        activity.dataset.queued = queued.total;
        activity.textContent = running.total + " running, " + queued.total + " queued";
      }
      table.dataset.updated = String(Date.now());
      status.textContent = "Updated " + new Date().toLocaleTimeString() + ".";
      const now = signature(board);
      if (shown !== null && now !== shown) {
        const top = board.items[0];
        announce("The leaderboard changed" + (top ? ": " + top.agent + " leads." : "."));
      } else if (failing) {
        announce("The leaderboard refreshes again.");
      }
      shown = now;
      failing = false;
    } catch (e) {
      status.textContent = "Could not refresh: " + e.message + ".";
      if (!failing) announce("The leaderboard could not be refreshed.");
      failing = true;
    }
  }

  if (me === null && Cow.token()) {
    Cow.me()
      .then((user) => {
        if (user) {
          me = user.id;
          refresh();
        }
      })
      .catch(() => {});
  }
  Cow.poll(refresh, every);
})();
