#!/usr/bin/env node
// A Корова 006 bot in plain node, no SDK: protocol 1 over JSON lines (docs/protocol.md).
// Plays a random card from its hand; takes the row with the fewest heads.
"use strict";
const readline = require("readline");

const heads = (c) => (c === 55 ? 7 : c % 11 === 0 ? 5 : c % 10 === 0 ? 3 : c % 5 === 0 ? 2 : 1);
const rowHeads = (row) => row.reduce((sum, c) => sum + heads(c), 0);

// A small seeded PRNG (mulberry32), so the bot's choices are reproducible from hello.seed.
// The seed may exceed 2^53: JSON numbers lose precision in JS, but deterministically.
let state = 1;
function random() {
  state = (state + 0x6d2b79f5) | 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

const send = (msg) => process.stdout.write(JSON.stringify(msg) + "\n");

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const msg = JSON.parse(line);
  switch (msg.type) {
    case "hello":
      state = Number(BigInt(msg.seed) % 4294967296n) | 0;
      send({ type: "ready", protocol: 1, name: "random.js" });
      break;
    case "play": {
      const hand = msg.view.hand;
      send({ id: msg.id, card: hand[Math.floor(random() * hand.length)] });
      break;
    }
    case "take_row": {
      const costs = msg.view.rows.map(rowHeads);
      send({ id: msg.id, row: costs.indexOf(Math.min(...costs)) });
      break;
    }
    case "match_end":
      process.exit(0);
    default: // round_start, round_end: nothing to do; stderr is for debug output
      break;
  }
});
