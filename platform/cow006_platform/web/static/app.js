/* Корова 006 pages: what every page shares.
 *
 * Cow.api() calls the JSON API (the Bearer token from localStorage when asked), Cow.me() is
 * the signed-in user, Cow.el() builds DOM nodes (text only, never HTML strings), and the
 * renderers (card, badge, matchRow) build the same markup as the server's templates.
 * The header shows who is signed in.
 */
"use strict";

const Cow = (() => {
  const KEY = "cow006.token";
  let mePromise = null;

  function token() {
    try {
      return localStorage.getItem(KEY) || "";
    } catch (e) {
      return "";
    }
  }

  function setToken(value) {
    localStorage.setItem(KEY, value);
    mePromise = null;
    document.dispatchEvent(new CustomEvent("cow006:auth"));
  }

  function clearToken() {
    forgetToken();
    document.dispatchEvent(new CustomEvent("cow006:auth"));
  }

  /* The saved token forgotten, quietly (a sign-out form is posting: the page goes away). */
  function forgetToken() {
    try {
      localStorage.removeItem(KEY);
    } catch (e) {
      /* storage refused: nothing was saved */
    }
    mePromise = null;
  }

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  /* The API's {"detail": ...} as one sentence: a string, a validation list, or {message}. */
  function detailText(body, status) {
    const d = body && body.detail;
    if (typeof d === "string") return d;
    if (Array.isArray(d)) {
      return d
        .map((e) => {
          const where = (e.loc || []).filter((x) => x !== "body").join(".");
          return (where ? where + ": " : "") + (e.msg || "invalid");
        })
        .join("; ");
    }
    if (d && typeof d === "object" && d.message) return d.message;
    return "the server answered " + status;
  }

  /* fetch + JSON; throws ApiError(status, detail).  auth: send the saved token. */
  async function api(path, { method = "GET", body, form, auth = true } = {}) {
    const headers = { Accept: "application/json" };
    const t = token();
    if (auth && t) headers.Authorization = "Bearer " + t;
    let payload;
    if (form) {
      payload = form;
    } else if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      payload = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, { method, headers, body: payload, cache: "no-store" });
    } catch (e) {
      throw new ApiError(0, "the server could not be reached");
    }
    const text = await res.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch (e) {
        data = null;
      }
    }
    if (!res.ok) throw new ApiError(res.status, detailText(data, res.status));
    return data;
  }

  /* The signed-in user ({id, name, is_admin}), or null (none, or a token the API refuses). */
  function me() {
    if (!token()) return Promise.resolve(null);
    if (!mePromise) {
      mePromise = api("/api/users/me").catch((e) => {
        if (e.status === 401) {
          Cow.tokenRejected = true;
          return null;
        }
        mePromise = null;
        throw e;
      });
    }
    return mePromise;
  }

  /* el("a", {href: "/x", class: "y"}, "text", child...): attributes, then text or nodes. */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  function heads(card) {
    if (card === 55) return 7;
    if (card % 11 === 0) return 5;
    if (card % 10 === 0) return 3;
    if (card % 5 === 0) return 2;
    return 1;
  }

  function headsOf(cards) {
    return cards.reduce((sum, c) => sum + heads(c), 0);
  }

  /* A card as the templates draw it; attr names the data attribute holding its number. */
  function card(c, extra, attr) {
    const h = heads(c);
    const dots = [];
    for (let i = 0; i < h; i++) dots.push(el("i"));
    return el(
      "li",
      { class: "card h" + h + (extra ? " " + extra : ""), [attr || "data-card"]: c },
      el("span", { class: "num" }, c),
      el("span", { class: "heads", "aria-hidden": "true" }, dots),
      el("span", { class: "vh" }, " (" + h + (h === 1 ? " head)" : " heads)")),
    );
  }

  function badge(state) {
    return el("span", { class: "badge badge-" + state }, state);
  }

  /* A version's validation as the templates' validation_note: its place in the queue while
   * pending ("2nd in line, about 20 s"), then the link to watch its validation match. */
  function ordinal(n) {
    const suffix = n % 100 >= 10 && n % 100 <= 20 ? "th" : { 1: "st", 2: "nd", 3: "rd" }[n % 10] || "th";
    return n + suffix;
  }

  function validationNote(v) {
    const out = [];
    if (v.queue_place) {
      const s = v.queue_seconds || 0;
      const wait = s < 120 ? "about " + s + " s" : "about " + Math.round(s / 60) + " min";
      out.push(
        el(
          "span",
          { class: "queue-place", "data-queue-place": v.queue_place },
          " " + ordinal(v.queue_place) + " in line, " + wait,
        ),
      );
    }
    if (v.validation_match_id) {
      out.push(" ");
      out.push(
        el(
          "a",
          { class: "validation-match", href: "/matches/" + Number(v.validation_match_id) },
          "watch its validation match",
        ),
      );
    }
    return out;
  }

  /* A leaderboard rank's change, as the server's _macros.html rank_change: ▲ places gained,
   * ▼ lost, = none; nothing before the first match. */
  function rankChange(change) {
    if (change === null || change === undefined) return null;
    const kind = change > 0 ? "up" : change < 0 ? "down" : "same";
    const size = Math.abs(change);
    return [
      " ",
      el(
        "span",
        { class: "rank-change rank-" + kind },
        el("span", { "aria-hidden": "true" }, { up: "▲", down: "▼", same: "=" }[kind] + (size || "")),
        el("span", { class: "vh" }, " (" + (change ? kind + " " + size : "unchanged") + ")"),
      ),
    ];
  }

  /* v with `digits` decimals as the server's filters write it (Python's format): an exact
   * tie (12.125, 12.5) goes to the even digit, where toFixed and Math.round go up, so a
   * redrawn row never reads differently from the one the server drew. */
  function fixed(v, digits) {
    const x = Number(v);
    // toFixed writes a double's exact decimal digits: a tie is 5 and nothing after it.
    const long = x.toFixed(Math.min(100, digits + 25));
    if (/^50*$/.test(long.slice(long.length - 25))) {
      const scale = 10 ** digits;
      const down = Math.floor(x * scale);
      return ((down % 2 === 0 ? down : down + 1) / scale).toFixed(digits);
    }
    return x.toFixed(digits);
  }

  function num(v, digits = 2) {
    return v === null || v === undefined ? "–" : fixed(v, digits);
  }

  function percent(v) {
    return v === null || v === undefined ? "–" : fixed(100 * v, 0) + "%";
  }

  function when(iso) {
    if (!iso) return "–";
    return new Date(iso).toISOString().slice(0, 16).replace("T", " ") + " UTC";
  }

  function seatsList(m) {
    return el(
      "ol",
      { class: "seats" },
      m.participants.map((p) =>
        el(
          "li",
          { class: p.rank === 1 ? "winner" : null },
          el("a", { href: "/agents/" + p.agent_id }, p.label),
          p.score === null ? null : [" ", el("span", { class: "score" }, p.score)],
          p.faults ? [" ", faultBadge(p, m.faults)] : null,
        ),
      ),
    );
  }

  // A seat's faults in a match: how many, and their kinds (as the server's _macros.html).
  function faultBadge(p, faults) {
    const kinds = [...new Set((faults || []).filter((f) => f.seat === p.seat).map((f) => f.kind))];
    const count = p.faults + (p.faults === 1 ? " fault" : " faults");
    return el("span", { class: "badge badge-fault" }, kinds.length ? count + ": " + kinds.join(", ") : count);
  }

  function matchRow(m) {
    return el(
      "tr",
      { "data-match": m.id },
      el("td", {}, el("a", { href: "/matches/" + m.id }, "#" + m.id)),
      el("td", { class: "wide" }, m.kind),
      el("td", {}, badge(m.status)),
      el("td", {}, seatsList(m)),
      el("td", { class: "wide when" }, when(m.finished_at)),
    );
  }

  function emptyRow(text, columns) {
    return el("tr", { class: "empty" }, el("td", { colspan: columns }, text));
  }

  function showError(node, message) {
    if (!node) return;
    node.textContent = message ? message.charAt(0).toUpperCase() + message.slice(1) : "";
    node.hidden = !message;
  }

  /* Call fn every `seconds` while the tab is visible; returns a function that stops it. */
  function poll(fn, seconds) {
    let timer = null;
    let stopped = false;
    const tick = async () => {
      if (stopped) return;
      if (!document.hidden) {
        try {
          if ((await fn()) === false) stopped = true;
        } catch (e) {
          /* fn reports its own errors */
        }
      }
      if (!stopped) timer = setTimeout(tick, seconds * 1000);
    };
    timer = setTimeout(tick, seconds * 1000);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }

  /* The header: who is signed in.  The server draws it from the session cookie; only a
   * browser with a saved token and no session is drawn here (a sign-out button that forgets
   * the token).  Every sign-out form forgets the saved token as it posts. */
  async function renderWhoami() {
    for (const form of document.querySelectorAll("form.sign-out-form")) {
      if (!form.dataset.bound) {
        form.dataset.bound = "1";
        form.addEventListener("submit", forgetToken);
      }
    }
    const box = document.getElementById("whoami");
    if (!box || box.dataset.user) return;
    let user = null;
    try {
      user = await me();
    } catch (e) {
      user = null;
    }
    const out = el("button", { type: "button", class: "link-button" }, "Sign out");
    out.addEventListener("click", () => clearToken());
    if (user) {
      box.replaceChildren("Signed in as ", el("strong", {}, user.name), " · ", out);
    } else if (token() && Cow.tokenRejected) {
      box.replaceChildren("Your saved token was refused · ", out);
    } else {
      box.replaceChildren(el("a", { href: "/login" }, "Sign in"));
    }
  }

  document.addEventListener("DOMContentLoaded", renderWhoami);
  document.addEventListener("cow006:auth", renderWhoami);

  return {
    ApiError,
    api,
    badge,
    card,
    clearToken,
    el,
    emptyRow,
    forgetToken,
    heads,
    headsOf,
    matchRow,
    me,
    num,
    percent,
    poll,
    rankChange,
    setToken,
    showError,
    token,
    tokenRejected: false,
    validationNote,
    when,
  };
})();
