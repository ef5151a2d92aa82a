/* The match page: the replay viewer, the owner's stderr, and waiting for an unplayed match.
 *
 * The viewer draws the steps the server replayed (cow006.replay.steps, embedded in the page
 * as the JSON data block #match-replay; see cow006_platform/web/replay.py): it applies no
 * game rule itself.  Each turn is 1 + N steps: step 0 reveals the N cards, step k shows the
 * rows after the k-th lowest card is placed, with the row it went to and the take it caused.
 *
 * The rows on screen are <ol data-row="i"> elements holding <li data-card="c"> cards.  The
 * step is in the URL as #r{round}t{turn}s{step} (round and turn from 1, step from 0), and on
 * the viewer as data-round, data-turn, data-step.
 */
"use strict";

(() => {
  const { el } = Cow;
  const matchId = location.pathname.split("/").filter(Boolean).pop();
  const seatsNode = document.getElementById("match-seats");
  const seats = seatsNode ? JSON.parse(seatsNode.textContent) : [];

  /* --- the owner's stderr ------------------------------------------------------------------ */

  async function showStderr() {
    if (!Cow.token()) return;
    let user = null;
    try {
      user = await Cow.me();
    } catch (e) {
      return;
    }
    if (!user) return;
    const mine = seats.filter((s) => user.is_admin || s.owner_id === user.id);
    if (!mine.length) return;
    const section = document.getElementById("stderr");
    const list = document.getElementById("stderr-list");
    if (!section || !list) return;
    for (const s of mine) {
      try {
        const out = await Cow.api("/api/matches/" + matchId + "/seats/" + s.seat + "/stderr");
        list.append(
          el(
            "details",
            { open: true, class: "stderr" },
            el("summary", {}, "Seat " + s.seat + ": " + out.label),
            el(
              "pre",
              { "data-stderr-seat": s.seat, tabindex: 0 }, // it scrolls: keys reach it
              out.stderr ? out.stderr : "(nothing was written to stderr)",
            ),
          ),
        );
      } catch (e) {
        list.append(el("p", { class: "error" }, "Seat " + s.seat + ": " + e.message));
      }
    }
    section.hidden = false;
  }

  /* --- a match not played yet: reload once it is ------------------------------------------- */

  function waitForResult() {
    const pending = document.getElementById("pending");
    if (!pending || !["queued", "running"].includes(pending.dataset.status)) return;
    const note = document.getElementById("pending-note");
    if (note) note.textContent = " (this page reloads by itself)";
    Cow.poll(async () => {
      const m = await Cow.api("/api/matches/" + matchId, { auth: false });
      if (m.status === "finished" || m.status === "failed") {
        location.reload();
        return false;
      }
      return true;
    }, Number(pending.dataset.refresh) || 5);
  }

  showStderr();
  waitForResult();

  /* --- the replay --------------------------------------------------------------------------- */

  const viewer = document.getElementById("viewer");
  const dataNode = document.getElementById("match-replay");
  if (!viewer || !dataNode) return;
  const replay = JSON.parse(dataNode.textContent);
  const names = replay.names;
  const players = names.length;
  const rounds = replay.rounds;

  /* Every step of the match, in order, with its round, turn and step number. */
  const steps = [];
  rounds.forEach((round, r) => {
    round.turns.forEach((turn, t) => {
      turn.steps.forEach((step, s) => {
        const drawn = { seat: null, card: null, row: null, take: null, ...step };
        steps.push({ ...drawn, r, t, s, cards: turn.cards, order: turn.order });
      });
    });
  });
  const key = (st) => "r" + (st.r + 1) + "t" + (st.t + 1) + "s" + st.s;
  const index = new Map(steps.map((st, i) => [key(st), i]));
  const last = steps.length - 1;
  const turnsIn = (r) => rounds[r].turns.length;

  const rowLists = [...viewer.querySelectorAll("ol[data-row]")];
  const rowWraps = [...viewer.querySelectorAll("[data-row-wrap]")];
  const playerRows = [...viewer.querySelectorAll("#players tbody tr")];
  const revealed = document.getElementById("revealed");
  const where = document.getElementById("where");
  const narration = document.getElementById("narration");
  const roundSelect = document.getElementById("round-select");
  const turnSelect = document.getElementById("turn-select");
  const speedSelect = document.getElementById("speed-select");
  const playButton = document.getElementById("play");
  const stepLink = document.getElementById("step-link");
  const buttons = {
    prevTurn: document.getElementById("prev-turn"),
    prevStep: document.getElementById("prev-step"),
    nextStep: document.getElementById("next-step"),
    nextTurn: document.getElementById("next-turn"),
  };
  let current = 0;
  let timer = null;

  rounds.forEach((_, r) => roundSelect.append(el("option", { value: r }, r + 1)));

  function fillTurns(r) {
    turnSelect.replaceChildren(
      ...rounds[r].turns.map((_, t) => el("option", { value: t }, t + 1)),
    );
  }

  function headsText(h) {
    return h + (h === 1 ? " head" : " heads");
  }

  function narrate(st) {
    const name = (seat) => names[seat];
    let text;
    if (st.s === 0) {
      text =
        "Turn " + (st.t + 1) + ": the cards are revealed: " +
        st.order.map((seat) => name(seat) + " " + st.cards[seat]).join(", ") + ".";
    } else if (!st.take) {
      text = name(st.seat) + " plays " + st.card + ": it goes to row " + (st.row + 1) + ".";
    } else {
      const h = headsText(st.take.heads);
      text =
        st.take.reason === "sixth"
          ? name(st.seat) + " plays " + st.card + " as the 6th card of row " + (st.row + 1) +
            " and takes its five cards (" + h + ")."
          : name(st.seat) + " plays " + st.card + ", lower than every row: " + name(st.seat) +
            " takes row " + (st.row + 1) + " (" + st.take.cards.length +
            (st.take.cards.length === 1 ? " card, " : " cards, ") + h + ").";
    }
    const roundOver = st.t === turnsIn(st.r) - 1 && st.s === players;
    if (roundOver) {
      text +=
        " End of round " + (st.r + 1) + ": " +
        st.pen.map((p, seat) => name(seat) + " +" + p).join(", ") + ".";
      if (st.r === rounds.length - 1) text += " The match is over.";
    }
    return text;
  }

  function render(i) {
    const st = steps[i];
    viewer.dataset.round = st.r + 1;
    viewer.dataset.turn = st.t + 1;
    viewer.dataset.step = st.s;
    viewer.dataset.index = i;
    st.rows.forEach((row, j) => {
      const placedHere = st.seat !== null && st.row === j;
      rowLists[j].replaceChildren(
        ...row.map((c) => Cow.card(c, placedHere && c === st.card ? "placed" : "")),
      );
      rowLists[j].setAttribute(
        "aria-label",
        "Row " + (j + 1) + ": " + row.length + (row.length === 1 ? " card, " : " cards, ") +
          headsText(Cow.headsOf(row)),
      );
      const wrap = rowWraps[j];
      const took = st.take !== null && st.take.row === j;
      wrap.classList.toggle("target", placedHere && !took);
      wrap.classList.toggle("took", took);
      wrap.classList.toggle("took-lowest", took && st.take.reason === "lowest");
      const box = wrap.querySelector(".taken");
      if (took) {
        box.replaceChildren(
          el(
            "span",
            { class: "taken-label" },
            names[st.take.seat] + " takes " + headsText(st.take.heads) +
              (st.take.reason === "sixth" ? " (6th card)" : " (lowest card)") + ":",
          ),
          el("ol", { class: "taken-cards" }, st.take.cards.map((c) => Cow.card(c, "gone", "data-taken-card"))),
        );
        box.hidden = false;
      } else {
        box.replaceChildren();
        box.hidden = true;
      }
    });
    revealed.replaceChildren(
      ...st.order.map((seat, k) => {
        const state = k < st.s - 1 ? "done" : k === st.s - 1 ? "current" : "waiting";
        return el(
          "li",
          { class: "reveal " + state, "data-seat": seat },
          el("ol", { class: "row mini" }, Cow.card(st.cards[seat], "", "data-played-card")),
          el("span", { class: "who" }, names[seat]),
        );
      }),
    );
    playerRows.forEach((tr, seat) => {
      tr.classList.toggle("acting", st.seat === seat);
      tr.classList.toggle("taking", st.take !== null && st.take.seat === seat);
      tr.querySelector(".played").textContent = st.cards[seat];
      tr.querySelector(".round-pen").textContent = st.pen[seat];
      tr.querySelector(".total").textContent = st.totals[seat];
    });
    where.textContent =
      "Round " + (st.r + 1) + " of " + rounds.length + " · turn " + (st.t + 1) + " of " +
      turnsIn(st.r) + " · " +
      (st.s === 0 ? "cards revealed" : "card " + st.s + " of " + players + " placed");
    narration.textContent = narrate(st);
    if (Number(roundSelect.value) !== st.r || turnSelect.options.length !== turnsIn(st.r)) {
      roundSelect.value = st.r;
      fillTurns(st.r);
    }
    turnSelect.value = st.t;
    buttons.prevStep.disabled = buttons.prevTurn.disabled = i === 0;
    buttons.nextStep.disabled = buttons.nextTurn.disabled = i === last;
    const anchor = "#" + key(st);
    stepLink.href = anchor;
    if (location.hash !== anchor) history.replaceState(null, "", anchor);
  }

  function go(i) {
    current = Math.max(0, Math.min(last, i));
    render(current);
  }

  function turnStart(r, t) {
    return index.get("r" + (r + 1) + "t" + (t + 1) + "s0");
  }

  function prevTurn() {
    const st = steps[current];
    if (st.s > 0) return go(turnStart(st.r, st.t));
    if (st.t > 0) return go(turnStart(st.r, st.t - 1));
    if (st.r > 0) return go(turnStart(st.r - 1, turnsIn(st.r - 1) - 1));
    return go(0);
  }

  function nextTurn() {
    const st = steps[current];
    if (st.t + 1 < turnsIn(st.r)) return go(turnStart(st.r, st.t + 1));
    if (st.r + 1 < rounds.length) return go(turnStart(st.r + 1, 0));
    return go(last);
  }

  function pause() {
    if (timer !== null) clearInterval(timer);
    timer = null;
    playButton.textContent = "Play";
    playButton.setAttribute("aria-pressed", "false");
  }

  function play() {
    if (current === last) go(0);
    pause();
    timer = setInterval(() => {
      if (current >= last) pause();
      else go(current + 1);
    }, Number(speedSelect.value) || 800);
    playButton.textContent = "Pause";
    playButton.setAttribute("aria-pressed", "true");
  }

  const manual = (fn) => () => {
    pause();
    fn();
  };

  buttons.prevStep.addEventListener("click", manual(() => go(current - 1)));
  buttons.nextStep.addEventListener("click", manual(() => go(current + 1)));
  buttons.prevTurn.addEventListener("click", manual(prevTurn));
  buttons.nextTurn.addEventListener("click", manual(nextTurn));
  playButton.addEventListener("click", () => (timer === null ? play() : pause()));
  speedSelect.addEventListener("change", () => {
    if (timer !== null) play();
  });
  roundSelect.addEventListener("change", manual(() => go(turnStart(Number(roundSelect.value), 0))));
  turnSelect.addEventListener(
    "change",
    manual(() => go(turnStart(steps[current].r, Number(turnSelect.value)))),
  );

  document.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const tag = e.target && e.target.tagName;
    if (["INPUT", "SELECT", "TEXTAREA"].includes(tag) || (e.target && e.target.isContentEditable)) {
      return;
    }
    switch (e.key) {
      case "ArrowRight":
        manual(e.shiftKey ? nextTurn : () => go(current + 1))();
        break;
      case "ArrowLeft":
        manual(e.shiftKey ? prevTurn : () => go(current - 1))();
        break;
      case "Home":
        manual(() => go(0))();
        break;
      case "End":
        manual(() => go(last))();
        break;
      case " ":
        if (tag === "BUTTON" || tag === "A" || tag === "SUMMARY") return;
        if (timer === null) play();
        else pause();
        break;
      default:
        return;
    }
    e.preventDefault();
  });

  function fromHash() {
    const found = index.get(location.hash.replace(/^#/, ""));
    return found === undefined ? null : found;
  }

  window.addEventListener("hashchange", () => {
    const i = fromHash();
    if (i !== null && i !== current) {
      pause();
      go(i);
    }
  });

  fillTurns(0);
  for (const id of ["controls", "narration", "revealed-section"]) {
    document.getElementById(id).hidden = false;
  }
  viewer.classList.add("live");
  const start = fromHash();
  go(start === null ? 0 : start);
})();
