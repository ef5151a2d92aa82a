// Starts Swagger UI on /docs (a static file: the pages' Content-Security-Policy allows no
// inline script).  The schema is the API's own; nothing is loaded from another origin, and
// no token is kept by Swagger UI (persistAuthorization off; the arena's pages keep theirs).
"use strict";
window.addEventListener("DOMContentLoaded", () => {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    persistAuthorization: false,
    validatorUrl: null, // the default sends the schema's URL to an outside validator
    showExtensions: false,
  });
});
