/* The agent page.  For its owner (or an admin): the versions again with the API token, so
 * rejection reasons show, and a link to upload.  For everybody: while a version is pending
 * validation, its state is polled until it is decided. */
"use strict";

(() => {
  const table = document.getElementById("versions");
  if (!table) return;
  const { el } = Cow;
  const id = table.dataset.agent;
  const ownerId = Number(table.dataset.owner);
  const errorBox = document.getElementById("versions-error");
  let privateView = false;

  /* A row under version v's line with what only its owner sees, in a <details> (``open``
   * or not) headed "Why vN <why>".  Bot text is data: el() sets it as text, never as HTML. */
  function ownerRow(v, attr, open, why, text) {
    return el(
      "tr",
      { class: "reason-row", [attr]: v.number },
      el(
        "td",
        { colspan: 5 },
        el(
          "details",
          { open },
          el("summary", {}, "Why v" + v.number + " " + why + " (only you see this)"),
          el("pre", { class: "reason", tabindex: 0 }, text), // it scrolls: keys reach it
        ),
      ),
    );
  }

  function rows(v) {
    const out = [
      el(
        "tr",
        { "data-version": v.number },
        el("td", {}, "v" + v.number),
        el("td", {}, el("code", {}, v.filename)),
        el("td", { class: "n" }, v.size + " B"),
        el(
          "td",
          { class: "status" },
          Cow.badge(v.status),
          v.suspended ? el("span", { class: "suspended" }, " suspended") : null,
          ...Cow.validationNote(v),
        ),
        el("td", { class: "when" }, Cow.when(v.created_at)),
      ),
    ];
    if (v.suspended_reason) {
      out.push(ownerRow(v, "data-suspended-for", true, "is suspended", v.suspended_reason));
    }
    if (v.reason) {
      out.push(ownerRow(v, "data-reason-for", v.status === "rejected", "was " + v.status, v.reason));
    }
    return out;
  }

  async function load() {
    try {
      const page = await Cow.api("/api/agents/" + id + "/versions?limit=200", {
        auth: privateView,
      });
      const all = page.items.flatMap(rows);
      table.tBodies[0].replaceChildren(
        ...(all.length ? all : [Cow.emptyRow("No version uploaded yet.", 5)]),
      );
      Cow.showError(errorBox, "");
      return page.items.some((v) => v.status === "pending");
    } catch (e) {
      Cow.showError(errorBox, "Could not load the versions: " + e.message);
      return true;
    }
  }

  async function start() {
    let user = null;
    try {
      user = await Cow.me();
    } catch (e) {
      user = null;
    }
    privateView = !!user && (user.is_admin || user.id === ownerId);
    document.getElementById("owner-tools").hidden = !privateView;
    const pending = table.querySelector(".badge-pending") !== null;
    if (privateView || pending) {
      if (await load()) Cow.poll(load, 3);
    }
  }

  start();
})();
