// cronfence dashboard: the action buttons. Pages are complete without this
// script; it only adds pause / resume / unset / trigger, which call the REST
// API with "Authorization: Bearer <token>". The token is typed by the
// operator and kept in this tab's sessionStorage, never in a cookie, so no
// other site can make the browser send it (see docs/dashboard.md).
(function () {
  "use strict";

  var TOKEN = "cronfence.token";
  var FLASH = "cronfence.flash";

  function byId(id) { return document.getElementById(id); }

  function getToken() {
    try { return sessionStorage.getItem(TOKEN) || ""; } catch (e) { return ""; }
  }

  function flash(kind, text) {
    var f = byId("flash");
    f.className = kind;
    f.textContent = text; // never innerHTML: messages carry job and owner names
  }

  function showTokenState() {
    var has = getToken() !== "";
    byId("token-state").textContent = has ? "A token is set for this tab." : "No token: actions need an admin token.";
    byId("token-forget").hidden = !has;
  }

  function utc(iso) {
    if (!iso) { return "an unknown time"; }
    var d = new Date(iso);
    if (isNaN(d.getTime())) { return iso; }
    return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
  }

  function done(action, job, body) {
    switch (action) {
      case "pause": return "Paused " + job + " on every replica.";
      case "resume": return "Resumed " + job + " on every replica (override enabled).";
      case "unset": return "Removed the override of " + job + ": it follows its config again.";
      default: return "Triggered " + job + ": running on " + (body && body.owner) + ", generation " + (body && body.generation) + ".";
    }
  }

  async function act(job, action) {
    var token = getToken();
    if (!token) {
      flash("error", "Type an admin bearer token first: the buttons call the REST API with it.");
      byId("token").focus();
      return;
    }
    // location.origin, not a relative URL: a page opened as
    // http://user:token@host/ would make fetch() refuse a URL that carries
    // credentials. credentials "omit" keeps the browser's Basic credentials
    // off the request: the API takes the bearer token only.
    // The API's path, under the prefix the dashboard is mounted at, is
    // the page's data-api.
    var url = location.origin + document.body.dataset.api + encodeURIComponent(job);
    var req = { method: "PUT", headers: { "Authorization": "Bearer " + token }, credentials: "omit" };
    if (action === "trigger") {
      req.method = "POST";
      url += "/run";
    } else {
      var enabled = action === "pause" ? false : action === "resume" ? true : null;
      req.headers["Content-Type"] = "application/json";
      req.body = JSON.stringify({ enabled: enabled, note: byId("note").value });
    }
    flash("pending", action + " " + job + "…");
    var resp, body = null;
    try {
      resp = await fetch(url, req);
      try { body = await resp.json(); } catch (e) { body = null; }
    } catch (e) {
      flash("error", action + " " + job + ": the server did not answer (" + e.message + ").");
      return;
    }
    if (resp.status === 409 && body && body.code === "CRON_JOB_ALREADY_EXECUTING") {
      var h = (body.details && body.details.holder) || {};
      flash("conflict", "Not triggered: " + job + " is already executing on " + (h.owner || "another replica") +
        " since " + utc(h.acquiredAt) + " (generation " + h.generation + ").");
      return;
    }
    if (resp.status === 401) {
      flash("error", action + " " + job + ": the token was refused (401). Check it and type it again.");
      return;
    }
    if (resp.status === 403) {
      flash("error", action + " " + job + ": this token may only read (403); pausing and triggering need an admin token.");
      return;
    }
    if (!resp.ok) {
      flash("error", action + " " + job + " failed: " + resp.status + " " + ((body && body.message) || resp.statusText));
      return;
    }
    // Reload for the new state; the message survives the reload.
    try { sessionStorage.setItem(FLASH, done(action, job, body)); } catch (e) { /* shown without reload below */ }
    location.reload();
  }

  document.addEventListener("DOMContentLoaded", function () {
    byId("controls").hidden = false;
    var saved = "";
    try { saved = sessionStorage.getItem(FLASH) || ""; sessionStorage.removeItem(FLASH); } catch (e) { saved = ""; }
    if (saved) { flash("ok", saved); }
    showTokenState();

    byId("token-form").addEventListener("submit", function (ev) {
      ev.preventDefault();
      var input = byId("token");
      var v = input.value.trim();
      input.value = "";
      try {
        if (v) { sessionStorage.setItem(TOKEN, v); } else { sessionStorage.removeItem(TOKEN); }
      } catch (e) {
        flash("error", "This browser refuses sessionStorage; the buttons cannot keep a token.");
      }
      showTokenState();
    });
    byId("token-forget").addEventListener("click", function () {
      try { sessionStorage.removeItem(TOKEN); } catch (e) { /* nothing kept */ }
      showTokenState();
    });

    var groups = document.querySelectorAll(".actions[data-job]");
    for (var i = 0; i < groups.length; i++) {
      var g = groups[i];
      g.hidden = false;
      g.addEventListener("click", function (ev) {
        var b = ev.target.closest("button[data-action]");
        if (!b) { return; }
        act(this.dataset.job, b.dataset.action);
      });
    }
  });
})();
