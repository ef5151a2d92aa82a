/* The upload page: once signed in (account.js), create an agent, upload a version and
 * follow its validation, through the API with the token kept in localStorage. */
"use strict";

(() => {
  const { el } = Cow;
  const $ = (id) => document.getElementById(id);
  const wanted = new URLSearchParams(location.search).get("agent");
  let user = null;
  let stopPolling = null;

  function busy(form, on) {
    for (const b of form.querySelectorAll("button")) b.disabled = on;
  }

  /* A form field the browser finds invalid: its message, or "" when it is fine. */
  function invalid(input, what) {
    if (input.validity.valid) return "";
    if (input.validity.valueMissing) return what + " is required";
    if (input.validity.patternMismatch) return what + ": 2 to 40 letters, digits, - or _";
    return what + " is not valid";
  }

  async function refreshAccount() {
    try {
      user = await Cow.me();
    } catch (e) {
      user = null;
    }
    $("signed-in").hidden = !user;
    $("signed-out").hidden = !!user;
    $("agents-section").hidden = !user;
    $("upload-section").hidden = !user;
    if (user) {
      $("me-name").textContent = user.name;
      await loadAgents();
    } else if (Cow.token() && Cow.tokenRejected) {
      Cow.showError($("signin-error"), "the saved token was refused: sign in again");
    } else if (document.getElementById("whoami").dataset.user) {
      // Signed in on the site (the cookie), but the scripts have no token to call the API
      // with: the forms below need it once in this browser.
      Cow.showError(
        $("signin-error"),
        "to create agents and upload from this page, sign in with your API token once more",
      );
    }
  }

  async function loadAgents(select) {
    const list = $("my-agents");
    const picker = $("upload-agent");
    try {
      const page = await Cow.api("/api/agents?owner_id=" + user.id + "&limit=200");
      list.replaceChildren(
        ...(page.items.length
          ? page.items.map((a) =>
              el(
                "li",
                { "data-agent": a.id },
                el("a", { href: "/agents/" + a.id }, a.name),
                " · " + a.versions + (a.versions === 1 ? " version" : " versions") +
                  (a.latest_active_version ? ", newest active v" + a.latest_active_version : ""),
              ),
            )
          : [el("li", { class: "muted" }, "No agent yet: create one below.")]),
      );
      const previous = select || picker.value || wanted;
      picker.replaceChildren(...page.items.map((a) => el("option", { value: a.id }, a.name)));
      if (previous && page.items.some((a) => String(a.id) === String(previous))) {
        picker.value = String(previous);
      }
      $("upload-form").querySelector("button").disabled = page.items.length === 0;
    } catch (e) {
      Cow.showError($("agent-error"), "could not list your agents: " + e.message);
    }
  }

  /* A form that sends one name: checked first, its buttons off while ``send(name)`` runs, its
   * error (or none) shown under it; what ``send`` returns runs once the form is cleared. */
  function nameForm(form, field, what, error, send) {
    $(form).addEventListener("submit", async (e) => {
      e.preventDefault();
      const input = $(field);
      const problem = invalid(input, what);
      if (problem) return Cow.showError($(error), problem);
      busy(e.target, true);
      try {
        const then = await send(input.value);
        Cow.showError($(error), "");
        input.value = "";
        if (then) await then();
      } catch (err) {
        Cow.showError($(error), err.message);
      } finally {
        busy(e.target, false);
      }
    });
  }

  nameForm("agent-form", "agent-name", "the agent's name", "agent-error", async (name) => {
    const agent = await Cow.api("/api/agents", { method: "POST", body: { name } });
    return () => loadAgents(agent.id);
  });

  /* " Watch its validation match." as a link to its replay, once the version has one. */
  function watch(v, text) {
    if (!v.validation_match_id) return [];
    const link = el(
      "a",
      { class: "validation-match", href: "/matches/" + Number(v.validation_match_id) },
      text.trim(),
    );
    return [" ", link];
  }

  function showVersion(agentId, v) {
    const link = $("upload-version-link");
    link.textContent = v.label;
    link.href = "/agents/" + agentId;
    const status = $("upload-status");
    status.textContent = v.status;
    status.className = "badge badge-" + v.status;
    const note = $("upload-note");
    const reason = $("upload-reason");
    if (v.status === "pending") {
      note.replaceChildren(
        "Validating: a short match against the built-in bots.",
        ...Cow.validationNote(v),
      );
    } else if (v.status === "active") {
      note.replaceChildren(
        "Validated: it can now enter ladders and be challenged.",
        ...watch(v, " Watch its validation match."),
      );
    } else {
      note.replaceChildren("Rejected.", ...watch(v, " Watch its validation match."), " Why:");
    }
    reason.textContent = v.reason || "";
    reason.hidden = !v.reason;
    $("upload-result").hidden = false;
  }

  $("upload-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const agentId = $("upload-agent").value;
    const file = $("upload-file").files[0];
    if (!agentId) return Cow.showError($("upload-error"), "create an agent first");
    if (!file) return Cow.showError($("upload-error"), "choose a .py or .zip file");
    // The API's cap, checked here too so a big file is not sent only to be refused (the
    // same sentence as the API's 413).
    const max = Number($("upload-file").dataset.maxBytes);
    if (max && file.size > max) {
      const mib = Math.round((max / 1048576) * 1000) / 1000;
      return Cow.showError($("upload-error"), `an upload is at most ${mib} MiB (${max} bytes)`);
    }
    if (stopPolling) stopPolling();
    $("upload-result").hidden = true;
    busy(e.target, true);
    const form = new FormData();
    form.append("file", file, file.name);
    try {
      const v = await Cow.api("/api/agents/" + agentId + "/versions", { method: "POST", form });
      Cow.showError($("upload-error"), "");
      showVersion(agentId, v);
      const started = Date.now();
      stopPolling = Cow.poll(async () => {
        const fresh = await Cow.api("/api/agents/" + agentId + "/versions/" + v.number);
        showVersion(agentId, fresh);
        if (fresh.status !== "pending") {
          loadAgents();
          return false;
        }
        if (Date.now() - started > 10 * 60 * 1000) {
          $("upload-note").textContent = "Still pending: look at the agent's page later.";
          return false;
        }
        return true;
      }, 1);
    } catch (err) {
      Cow.showError($("upload-error"), err.message);
    } finally {
      busy(e.target, false);
    }
  });

  document.addEventListener("cow006:auth", refreshAccount);
  refreshAccount();
})();
