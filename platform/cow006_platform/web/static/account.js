/* The account forms of /login and /upload (templates/_account.html): POST forms that work
 * without this script.  With it: the token is checked before the page is left (its error
 * shown at once), the name too; the token is kept in localStorage for the scripts' API calls
 * (the pages themselves know the user from the session cookie); the token a registration
 * shows is kept the same way; signing out forgets it.  The token is only ever sent in a
 * POST body or an Authorization header, never in a URL. */
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  if (!$("signin-form")) return;

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

  /* Sign in: the token is checked first (its error shown here, no page load), kept in this
   * browser for the scripts, then the form is posted (POST /login: the session cookie for the
   * pages).  The token is only ever in a POST body or a header, never in a URL. */
  $("signin-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const form = e.target;
    const input = $("token-input");
    const token = input.value.trim();
    if (!token) return Cow.showError($("signin-error"), "paste your API token first");
    busy(form, true);
    try {
      const res = await fetch("/api/users/me", { headers: { Authorization: "Bearer " + token } });
      if (!res.ok) {
        const body = await res.json().catch(() => null);
        throw new Error(body && typeof body.detail === "string" ? body.detail : "the token was refused");
      }
      Cow.tokenRejected = false;
      localStorage.setItem("cow006.token", token);
      Cow.showError($("signin-error"), "");
      form.submit(); // no submit event: this handler does not run again
    } catch (err) {
      Cow.showError($("signin-error"), err.message);
      busy(form, false);
    }
  });

  /* Register: the name is checked here, then the form is posted (POST /register), whose
   * answer shows the token once and signs this browser in. */
  $("register-form").addEventListener("submit", (e) => {
    const problem = invalid($("register-name"), "the name");
    if (problem) {
      e.preventDefault();
      Cow.showError($("register-error"), problem);
    }
  });

  /* The answer of a registration: the new token, kept for the scripts. */
  const created = $("new-token-value").textContent.trim();
  if (created && created !== Cow.token()) {
    localStorage.setItem("cow006.token", created);
  }
  $("copy-token").hidden = !created;

  $("copy-token").addEventListener("click", async () => {
    const button = $("copy-token");
    try {
      await navigator.clipboard.writeText($("new-token-value").textContent);
      button.textContent = "Copied";
    } catch (e) {
      const range = document.createRange();
      range.selectNodeContents($("new-token-value"));
      const sel = getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      button.textContent = "Selected: copy it with Ctrl+C";
    }
  });

  /* Sign out: the form posts (POST /logout ends the session); the saved token goes too. */
  $("sign-out-form").addEventListener("submit", () => {
    $("new-token").hidden = true;
    Cow.forgetToken();
  });

})();
