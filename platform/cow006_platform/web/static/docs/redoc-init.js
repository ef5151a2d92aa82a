// Starts ReDoc on /redoc (a static file: the pages' Content-Security-Policy allows no inline
// script).  The schema is the API's own; nothing is loaded from another origin.  ReDoc's
// styles are <style> elements it creates: they carry this response's nonce, which the
// policy allows for styles (apidocs.py).  Search is off: it runs in a blob: worker.
"use strict";
window.addEventListener("DOMContentLoaded", () => {
  const root = document.getElementById("redoc");
  Redoc.init("/openapi.json", { disableSearch: true, nonce: root.dataset.nonce }, root);
});
