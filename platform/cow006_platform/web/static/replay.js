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
 *
 * Beside the board: each row's heads and its danger slot (a row of 5 cards: the next card
 * there takes it), the hands (a toggle), the faults of the turn on the card they replaced,
 * the cost of every row for a "lowest" take, round and match winners, and a scrubber over
 * every step of the match.  All of it is read from the server's data, none is a rule.
 *
 * The owner's stderr is fetched with their token; it has no turn marks of its own, so only the
 * lines the bot started with one (r2t5: round 2, turn 5) are shown at their turn.
 */
"use strict";

(() => {
  const { el } = Cow;
  const matchId = location.pathname.split("/").filter(Boolean).pop();
  const seatsNode = document.getElementById("match-seats");
  const seats = seatsNode ? JSON.parse(seatsNode.textContent) : [];

  /* --- the owner's stderr ------------------------------------------------------------------ */

  // The lines a bot marked with their turn (r{round}t{turn}, from 1), by "r2t5", then seat.
  const MARK = /^\s*\[?r(\d{1,2})t(\d{1,2})\b\]?[:\s]?\s?(.*)$/;
  const MARKED_SHOWN = 20; // lines a turn shows per seat; the full text stays below
  const marked = new Map();
  let stderrShown = () => {};

  function markLines(seat, label, text) {
    for (const line of text.split("\n")) {
      const m = MARK.exec(line);
      if (!m) continue;
      const at = "r" + Number(m[1]) + "t" + Number(m[2]);
      if (!marked.has(at)) marked.set(at, new Map());
      const bySeat = marked.get(at);
      if (!bySeat.has(seat)) bySeat.set(seat, { label, lines: [], more: 0 });
      const entry = bySeat.get(seat);
      if (entry.lines.length < MARKED_SHOWN) entry.lines.push(m[3].slice(0, 500));
      else entry.more += 1;
    }
  }

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
        if (out.stderr) markLines(s.seat, out.label, out.stderr);
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
    stderrShown();
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
        steps.push({
          ...drawn,
          r,
          t,
          s,
          cards: turn.cards,
          order: turn.order,
          faults: turn.faults || [],
          forfeited: turn.forfeited || [],
        });
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
  const scrubber = document.getElementById("scrubber");
  const roundMarks = document.getElementById("round-marks");
  const timeline = document.getElementById("timeline");
  const outcome = document.getElementById("outcome");
  const handsToggle = document.getElementById("hands-toggle");
  const handsSection = document.getElementById("hands");
  const handList = document.getElementById("hand-list");
  const turnStderr = document.getElementById("turn-stderr");
  const turnStderrList = document.getElementById("turn-stderr-list");
  const rowHeads = rowWraps.map((w) => w.querySelector("[data-row-heads]"));
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

  function together(seats) {
    return seats.map((seat) => names[seat]).join(" and ");
  }

  const FALLBACK = {
    card: "fallback card",
    row: "fallback row",
    decision: "fallback card or row",
    none: "fault",
  };

  // What replaced this seat's decisions this turn: its faults, or its forfeit.
  function fallbackOf(st, seat) {
    const faults = st.faults.filter((f) => f.seat === seat);
    if (faults.length) {
      return {
        label: faults.map((f) => FALLBACK[f.fallback] + ": " + f.kind).join("; "),
        card: faults.some((f) => f.fallback === "card" || f.fallback === "decision"),
        detail: faults.map((f) => f.kind + (f.detail ? " (" + f.detail + ")" : "")).join("; "),
      };
    }
    if (st.forfeited.includes(seat)) {
      return { label: "fallback card: forfeited", card: true, detail: "forfeited" };
    }
    return null;
  }

  // A "lowest" take: what every row would have cost, and whether the chosen one was cheapest.
  function costsText(take) {
    const least = Math.min(...take.costs);
    const rowsText = take.costs
      .map((c, j) => "row " + (j + 1) + ": " + c + (j === take.row ? " (chosen)" : ""))
      .join(", ");
    const verdict =
      take.costs[take.row] === least
        ? "the chosen row is the cheapest"
        : "the chosen row is not the cheapest (" + headsText(least) + " was possible)";
    return "Each row's cost in heads: " + rowsText + "; " + verdict + ".";
  }

  function outcomeText(st) {
    if (st.s !== players || st.t !== turnsIn(st.r) - 1) return "";
    const round = rounds[st.r];
    let text = "";
    if (round.winners && round.winners.length) {
      text =
        "Round " + (st.r + 1) + " won by " + together(round.winners) + " (" +
        headsText(st.pen[round.winners[0]]) + " this round).";
    }
    if (st.r === rounds.length - 1 && replay.winners && replay.winners.length) {
      text +=
        " " + together(replay.winners) + (replay.winners.length === 1 ? " wins" : " share") +
        " the match with " + headsText(st.totals[replay.winners[0]]) + ".";
    }
    return text.trim();
  }

  // The cards each seat holds before this turn: its deal less the cards of the turns before.
  function handsAt(st) {
    const dealt = rounds[st.r].hands || [];
    const played = new Set();
    rounds[st.r].turns.slice(0, st.t).forEach((turn) => turn.cards.forEach((c) => played.add(c)));
    return dealt.map((hand) => hand.filter((c) => !played.has(c)));
  }

  function renderHands(st) {
    if (handsSection.hidden) return;
    handList.replaceChildren(
      ...handsAt(st).map((hand, seat) =>
        el(
          "div",
          { class: "hand", "data-hand-seat": seat },
          el("span", { class: "who" }, names[seat]),
          el(
            "ol",
            { class: "row mini", "aria-label": names[seat] + ": " + hand.length + " cards" },
            hand.map((c) =>
              Cow.card(c, c === st.cards[seat] ? "this-turn" : "", "data-hand-card"),
            ),
          ),
        ),
      ),
    );
  }

  function renderTurnStderr(st) {
    const bySeat = marked.get("r" + (st.r + 1) + "t" + (st.t + 1));
    if (!marked.size) return;
    turnStderr.hidden = false;
    if (!bySeat) {
      turnStderrList.replaceChildren(el("p", { class: "muted" }, "No marked line for this turn."));
      return;
    }
    turnStderrList.replaceChildren(
      ...[...bySeat.entries()].map(([seat, entry]) =>
        el(
          "div",
          { class: "stderr-turn" },
          el("span", { class: "who" }, "Seat " + seat + ": " + entry.label),
          el(
            "pre",
            { "data-turn-stderr-seat": seat },
            entry.lines.join("\n") + (entry.more ? "\n(" + entry.more + " more lines)" : ""),
          ),
        ),
      ),
    );
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
    } else if (st.take.reason === "lowest" && st.take.costs) {
      text =
        name(st.seat) + " plays " + st.card + ", lower than every row: " + name(st.seat) +
        " takes row " + (st.row + 1) + " (" + headsText(st.take.heads) + "). " +
        costsText(st.take);
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
    if (st.s > 0) {
      const fb = fallbackOf(st, st.seat);
      if (fb) text += " (" + name(st.seat) + "'s " + fb.label + ".)";
    } else {
      const faulted = st.order.filter((seat) => fallbackOf(st, seat));
      if (faulted.length) {
        text +=
          " " + faulted.map((seat) => name(seat) + ": " + fallbackOf(st, seat).label).join("; ") +
          ".";
      }
    }
    const roundOver = st.t === turnsIn(st.r) - 1 && st.s === players;
    if (roundOver) {
      text +=
        " End of round " + (st.r + 1) + ": " +
        st.pen.map((p, seat) => name(seat) + " +" + p).join(", ") + ".";
      const late = rounds[st.r].late_faults || [];
      if (late.length) {
        text +=
          " Faults in the end-of-round notice: " +
          late.map((f) => name(f.seat) + " " + f.kind).join(", ") + ".";
      }
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
      const full = row.length >= 5;
      const cards = row.map((c) => Cow.card(c, placedHere && c === st.card ? "placed" : ""));
      // The danger slot: the place of a 6th card, which would take the row's five.
      if (full) cards.push(el("li", { class: "slot danger", "aria-hidden": "true" }, "6th"));
      rowLists[j].replaceChildren(...cards);
      const h = Cow.headsOf(row);
      rowLists[j].setAttribute(
        "aria-label",
        "Row " + (j + 1) + ": " + row.length + (row.length === 1 ? " card, " : " cards, ") +
          headsText(h) + (full ? "; full: the next card here takes it" : ""),
      );
      rowHeads[j].dataset.rowHeads = h;
      rowHeads[j].replaceChildren(
        el("b", {}, h),
        el("span", { class: "word" }, h === 1 ? " head" : " heads"),
      );
      const wrap = rowWraps[j];
      wrap.classList.toggle("full", full);
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
          st.take.costs ? el("span", { class: "costs" }, costsText(st.take)) : null,
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
        const fb = fallbackOf(st, seat);
        return el(
          "li",
          {
            class: "reveal " + state + (fb ? " fallback" : ""),
            "data-seat": seat,
            "data-fallback": fb ? fb.label : null,
            title: fb ? fb.detail : null,
          },
          el(
            "ol",
            { class: "row mini" },
            Cow.card(st.cards[seat], fb && fb.card ? "fallback" : "", "data-played-card"),
          ),
          el("span", { class: "who" }, names[seat]),
          fb ? el("span", { class: "fault-mark" }, fb.label) : null,
        );
      }),
    );
    playerRows.forEach((tr, seat) => {
      tr.classList.toggle("acting", st.seat === seat);
      tr.classList.toggle("taking", st.take !== null && st.take.seat === seat);
      const fb = fallbackOf(st, seat);
      tr.classList.toggle("faulted", fb !== null);
      tr.querySelector(".played").replaceChildren(
        String(st.cards[seat]),
        fb ? el("span", { class: "fault-mark", title: fb.label }, " fallback") : "",
      );
      tr.querySelector(".round-pen").textContent = st.pen[seat];
      tr.querySelector(".total").textContent = st.totals[seat];
    });
    where.textContent =
      "Round " + (st.r + 1) + " of " + rounds.length + " · turn " + (st.t + 1) + " of " +
      turnsIn(st.r) + " · " +
      (st.s === 0 ? "cards revealed" : "card " + st.s + " of " + players + " placed");
    narration.textContent = narrate(st);
    const won = outcomeText(st);
    outcome.textContent = won;
    outcome.hidden = !won;
    scrubber.value = i;
    scrubber.setAttribute(
      "aria-valuetext",
      "Round " + (st.r + 1) + ", turn " + (st.t + 1) + ", step " + st.s,
    );
    renderHands(st);
    renderTurnStderr(st);
    timeline.querySelectorAll(".now").forEach((c) => c.classList.remove("now"));
    const now = timeline.querySelector('[data-r="' + st.r + '"][data-t="' + st.t + '"]');
    if (now) now.classList.add("now");
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

  scrubber.max = last;
  rounds.forEach((_, r) => roundMarks.append(el("option", { value: turnStart(r, 0), label: "Round " + (r + 1) })));
  scrubber.addEventListener("input", manual(() => go(Number(scrubber.value))));
  // Under the scrubber, a cell per turn: round starts, and the turns with a fault (red) or a
  // forfeited seat's fallbacks.  The scrubber is the control; a click on a cell is a shortcut.
  const cells = [];
  rounds.forEach((round, r) =>
    round.turns.forEach((turn, t) => {
      const late = t === round.turns.length - 1 && (round.late_faults || []).length > 0;
      const cls = [
        "turn-cell",
        t === 0 && r > 0 ? "round-start" : "",
        turn.faults.length || late ? "fault" : turn.forfeited.length ? "forfeit" : "",
      ];
      const cell = el("li", {
        class: cls.filter(Boolean).join(" "),
        "data-r": r,
        "data-t": t,
        title: "Round " + (r + 1) + ", turn " + (t + 1) +
          (turn.faults.length ? ": " + turn.faults.map((f) => names[f.seat] + " " + f.kind).join(", ") : ""),
      });
      cell.addEventListener("click", manual(() => go(turnStart(r, t))));
      cells.push(cell);
    }),
  );
  timeline.replaceChildren(...cells);
  handsToggle.addEventListener("click", () => {
    const show = handsSection.hidden;
    handsSection.hidden = !show;
    handsToggle.setAttribute("aria-pressed", String(show));
    handsToggle.textContent = show ? "Hide hands" : "Show hands";
    renderHands(steps[current]);
  });
  stderrShown = () => renderTurnStderr(steps[current]);

  fillTurns(0);
  for (const id of ["controls", "replay-options", "narration", "revealed-section"]) {
    document.getElementById(id).hidden = false;
  }
  viewer.classList.add("live");
  const start = fromHash();
  go(start === null ? 0 : start);
})();
