"use strict";
// Starts Swagger UI (templates/api/docs.html) from a file, so the page needs no inline script.
window.addEventListener("DOMContentLoaded", () => {
  const root = document.getElementById("swagger-ui");
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  window.ui = SwaggerUIBundle({
    url: root.dataset.schemaUrl,
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
    // No badge from validator.swagger.io: nothing leaves our origin.
    validatorUrl: null,
    // "Try it out" with the session: Django wants the CSRF token on unsafe methods.
    requestInterceptor: (request) => {
      if (!["GET", "HEAD", "OPTIONS"].includes((request.method || "GET").toUpperCase())) {
        request.headers["X-CSRFToken"] = csrf;
      }
      return request;
    },
  });
});
