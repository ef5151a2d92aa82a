// Attack: memory spread over node processes.  Three node children each fill a 400 MiB
// buffer (each well within its RLIMIT_AS), 1.2 GiB in all.  The slot's memory cap counts
// the sum: the slot is killed.  If all three are still alive and full a moment later, it
// says ESCAPED on stderr.
"use strict";
const fs = require("fs");
const readline = require("readline");
const { spawn } = require("child_process");

const send = (msg) => process.stdout.write(JSON.stringify(msg) + "\n");
const heads = (c) => (c === 55 ? 7 : c % 11 === 0 ? 5 : c % 10 === 0 ? 3 : c % 5 === 0 ? 2 : 1);

function sandboxed() {
  try {
    const init = fs.readFileSync("/proc/1/cmdline");
    return process.getuid() !== 0 && process.pid < 50 && init.includes("bwrap");
  } catch (e) {
    return false;
  }
}

const CHILD =
  "const b = Buffer.alloc(400 * 1024 * 1024, 1); process.stdout.write('full\\n');" +
  "setInterval(() => { b[0] = 2; }, 1000);";

let fired = false;

function attack(done) {
  process.stderr.write("ATTACK node_hogs\n");
  let full = 0;
  let exited = 0;
  const kids = [];
  for (let i = 0; i < 3; i++) {
    const kid = spawn(process.execPath, ["-e", CHILD], { stdio: ["ignore", "pipe", "inherit"] });
    kid.stdout.on("data", () => { full += 1; });
    kid.on("exit", () => { exited += 1; });
    kid.on("error", () => { exited += 1; });
    kids.push(kid);
  }
  const start = Date.now();
  const check = setInterval(() => {
    if (full + exited >= 3 || Date.now() - start > 20000) {
      clearInterval(check);
      setTimeout(() => {
        process.stderr.write(`node_hogs: ${full} children filled, ${exited} exited, ${Date.now() - start} ms\n`);
        if (full === 3 && exited === 0) process.stderr.write("ESCAPED: 1200 MiB in node children\n");
        done();
      }, 500);
    }
  }, 20);
}

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const msg = JSON.parse(line);
  if (msg.type === "hello") {
    send({ type: "ready", protocol: 1, name: "node_hogs" });
  } else if (msg.type === "play") {
    const card = Math.min(...msg.view.hand);
    if (!fired && sandboxed()) {
      fired = true;
      attack(() => send({ id: msg.id, card }));
    } else {
      send({ id: msg.id, card });
    }
  } else if (msg.type === "take_row") {
    const costs = msg.view.rows.map((row) => row.reduce((s, c) => s + heads(c), 0));
    send({ id: msg.id, row: costs.indexOf(Math.min(...costs)) });
  } else if (msg.type === "match_end") {
    process.exit(0);
  }
});
