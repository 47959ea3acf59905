// cronfence dashboard: the action buttons and the page's own refresh.
// Pages are complete without this script. The buttons post to the
// dashboard's /act with the action key the page was rendered with (signed
// for the token that opened it, never the token itself) and a header no
// form of another site can send (see docs/dashboard.md).
(function () {
  "use strict";

  var FLASH = "cronfence.flash";
  var REFRESH_EVERY = 10000; // ms
  var lastFlash = 0;
  var busy = false;
  var confirming = false; // an acknowledgement waits for its confirmation

  function byId(id) { return document.getElementById(id); }

  function flash(kind, text) {
    var f = byId("flash");
    f.className = kind;
    f.textContent = text; // never innerHTML: messages carry job and owner names
    lastFlash = Date.now();
  }

  function utc(iso) {
    if (!iso) { return "an unknown time"; }
    var d = new Date(iso);
    if (isNaN(d.getTime())) { return iso; }
    return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
  }

  function done(action, job, body) {
    switch (action) {
      case "pause": return "Paused " + job + " on every replica" +
        (body && body.override && body.override.until ? " until " + utc(body.override.until) : "") + ".";
      case "resume": return "Resumed " + job + " on every replica (override enabled).";
      case "unset": return "Removed the override of " + job + ": it follows its config again.";
      default: return "Triggered " + job + ": running on " + (body && body.owner) + ", generation " + (body && body.generation) + ".";
    }
  }

  async function act(job, action) {
    var note = byId("note"), until = byId("until");
    var req = {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Cronfence-Action": "1" },
      credentials: "same-origin",
      body: JSON.stringify({ job: job, action: action, note: note ? note.value : "", key: document.body.dataset.key || "",
        until: action === "pause" && until ? until.value.trim() : "" })
    };
    busy = true;
    flash("pending", action + " " + job + "…");
    var resp, body = null;
    try {
      resp = await fetch(location.origin + document.body.dataset.act, req);
      try { body = await resp.json(); } catch (e) { body = null; }
    } catch (e) {
      busy = false;
      flash("error", action + " " + job + ": the server did not answer (" + e.message + ").");
      return;
    }
    busy = false;
    if (resp.status === 409 && body && body.code === "CRON_JOB_ALREADY_EXECUTING") {
      var h = (body.details && body.details.holder) || {};
      flash("conflict", "Not triggered: " + job + " is already executing on " + (h.owner || "another replica") +
        " since " + utc(h.acquiredAt) + " (generation " + h.generation + ").");
      return;
    }
    if (resp.status === 403) {
      flash("error", action + " " + job + " refused (403): " + ((body && body.message) || "this sign-in may only read") + ".");
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

  // acknowledge posts an acknowledgement of the alert a row shows: of
  // that alert (its id), not a later one of the same kind and subject.
  async function acknowledge(row) {
    var kind = row.dataset.kind, subject = row.dataset.subject;
    var what = kind + " of " + subject;
    var note = byId("note"), until = byId("until");
    var req = {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Cronfence-Action": "1" },
      credentials: "same-origin",
      body: JSON.stringify({ action: "acknowledge", kind: kind, subject: subject, alertId: Number(row.dataset.alertId),
        note: note ? note.value : "", key: document.body.dataset.key || "" })
    };
    busy = true;
    flash("pending", "acknowledge " + what + "…");
    var resp, body = null;
    try {
      resp = await fetch(location.origin + document.body.dataset.act, req);
      try { body = await resp.json(); } catch (e) { body = null; }
    } catch (e) {
      busy = false;
      flash("error", "acknowledge " + what + ": the server did not answer (" + e.message + ").");
      return;
    }
    busy = false;
    if (resp.status === 404 && body && body.code === "ALERT_NOT_FOUND") {
      flash("error", "Not acknowledged: " + what + " is no longer open (resolved, or raised again since). Reload for the alerts now.");
      return;
    }
    if (!resp.ok) {
      flash("error", "acknowledge " + what + " failed: " + resp.status + " " + ((body && body.message) || resp.statusText));
      return;
    }
    var text = "Acknowledged " + what + " as " + ((body && body.ack && body.ack.by) || "you") +
      ": silenced until it changes or is resolved.";
    try { sessionStorage.setItem(FLASH, text); } catch (e) { /* shown without reload below */ }
    location.reload();
  }

  // askAck is an acknowledge button's two steps: the first asks, the second
  // (Confirm) acknowledges, Cancel puts the button back.
  function askAck(group, step) {
    var ask = group.querySelector('[data-step="ask"]');
    var confirm = group.querySelector('[data-step="confirm"]');
    var cancel = group.querySelector('[data-step="cancel"]');
    confirming = step === "ask";
    ask.hidden = confirming;
    confirm.hidden = cancel.hidden = !confirming;
    if (step === "confirm") {
      confirm.hidden = cancel.hidden = true;
      acknowledge(group.closest("tr.alert"));
    }
  }

  // post sends one action to /act and returns [response, body], or null
  // when the server did not answer (said in the flash).
  async function post(what, payload) {
    payload.key = document.body.dataset.key || "";
    busy = true;
    flash("pending", what + "…");
    try {
      var resp = await fetch(location.origin + document.body.dataset.act, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Cronfence-Action": "1" },
        credentials: "same-origin",
        body: JSON.stringify(payload)
      });
      var body = null;
      try { body = await resp.json(); } catch (e) { body = null; }
      return [resp, body];
    } catch (e) {
      flash("error", what + ": the server did not answer (" + e.message + ").");
      return null;
    } finally {
      busy = false;
    }
  }

  // leave shows text after navigating to path (under the dashboard's prefix).
  function leave(text, path) {
    try { sessionStorage.setItem(FLASH, text); } catch (e) { /* shown without reload */ }
    location.href = location.origin + document.body.dataset.act.replace(/\/act$/, "") + path;
  }

  // saveSchedule sends a schedule form: a create, or an update of the
  // version the page was read at (a change since is a conflict, shown
  // with the current version).
  async function saveSchedule(form) {
    var f = form.elements, create = form.dataset.mode === "create";
    var name = create ? f.name.value : form.dataset.name;
    var sc = { spec: f.spec.value, timeZone: f.timeZone.value, kind: f.kind.value, overlap: f.overlap.value,
      timeout: f.timeout.value, leaseTTL: f.leaseTTL.value, catchUp: f.catchUp.value, catchUpWindow: f.catchUpWindow.value,
      maxCatchUp: f.maxCatchUp.value === "" ? 0 : Number(f.maxCatchUp.value), jitter: f.jitter.value,
      retryBackoff: f.retryBackoff.value,
      exclude: f.exclude.value.split("\n").map(function (e) { return e.trim(); }).filter(function (e) { return e !== ""; }),
      maxAttempts: f.maxAttempts.value === "" ? 0 : Number(f.maxAttempts.value), disabled: f.disabled.checked, args: null };
    if (f.args.value.trim() !== "") {
      try { sc.args = JSON.parse(f.args.value); } catch (e) {
        flash("error", "args: not JSON (" + e.message + ").");
        return;
      }
    }
    if (create) { sc.name = name; } else { sc.version = Number(f.version.value); }
    var what = (create ? "create " : "save ") + name;
    var got = await post(what, { action: create ? "schedule-create" : "schedule-update", job: name, schedule: sc });
    if (!got) { return; }
    var resp = got[0], body = got[1];
    if (resp.status === 409 && body && body.code === "SCHEDULE_CONFLICT") {
      var d = body.details || {};
      flash("conflict", create ? "Not created: a schedule named " + name + " exists (version " + d.currentVersion + ")." :
        "Not saved: " + name + " is at version " + d.currentVersion + " now, not " + d.version +
        " (changed since this page was read). Reload to see it, then edit again.");
      return;
    }
    if (!resp.ok) {
      flash("error", what + " refused (" + resp.status + "): " + ((body && body.message) || resp.statusText));
      return;
    }
    leave((create ? "Created " : "Saved ") + name + " at version " + body.version + ".", "/schedule?name=" + encodeURIComponent(name));
  }

  // askDelete is the delete button's two steps, as askAck's.
  async function askDelete(group, step) {
    var ask = group.querySelector('[data-step="ask"]');
    var confirm = group.querySelector('[data-step="confirm"]');
    var cancel = group.querySelector('[data-step="cancel"]');
    confirming = step === "ask";
    ask.hidden = confirming;
    confirm.hidden = cancel.hidden = !confirming;
    if (step !== "confirm") { return; }
    confirm.hidden = cancel.hidden = true;
    var name = group.dataset.name, version = Number(group.dataset.version);
    var got = await post("delete " + name, { action: "schedule-delete", job: name, version: version });
    if (!got) { return; }
    var resp = got[0], body = got[1];
    if (resp.status === 409 && body && body.code === "SCHEDULE_CONFLICT") {
      flash("conflict", "Not deleted: " + name + " is at version " + ((body.details || {}).currentVersion) + " now, not " + version + ". Reload to see it.");
      return;
    }
    if (!resp.ok) {
      flash("error", "delete " + name + " refused (" + resp.status + "): " + ((body && body.message) || resp.statusText));
      return;
    }
    leave("Deleted " + name + " on every replica; its runs stay.", "/schedules");
  }

  // askCancelBackfill is a backfill's Cancel button's two steps, as
  // askAck's: Confirm cancels it as the page's token; "Keep it running"
  // puts the button back. A backfill that ended meanwhile answers 409
  // BACKFILL_ENDED, shown as a message.
  async function askCancelBackfill(group, step) {
    var ask = group.querySelector('[data-step="ask"]');
    var confirm = group.querySelector('[data-step="confirm"]');
    var cancel = group.querySelector('[data-step="cancel"]');
    confirming = step === "ask";
    ask.hidden = confirming;
    confirm.hidden = cancel.hidden = !confirming;
    if (step !== "confirm") { return; }
    confirm.hidden = cancel.hidden = true;
    var job = group.dataset.job, id = Number(group.dataset.backfillId);
    var what = "cancel backfill " + id + " of " + job;
    var got = await post(what, { action: "backfill-cancel", job: job, backfillId: id });
    if (!got) { ask.hidden = false; return; }
    var resp = got[0], body = got[1];
    if (resp.status === 409 && body && body.code === "BACKFILL_ENDED") {
      flash("conflict", "Not cancelled: backfill " + id + " of " + job + " is " +
        ((body.details && body.details.state) || "ended") + " already. Reload to see it.");
      return;
    }
    if (!resp.ok) {
      ask.hidden = false;
      flash("error", what + " refused (" + resp.status + "): " + ((body && body.message) || resp.statusText));
      return;
    }
    try {
      sessionStorage.setItem(FLASH, "Cancelled backfill " + id + " of " + job + " as " + ((body && body.cancelledBy) || "you") +
        ": no slot is claimed after it (a run in flight ends as it would).");
    } catch (e) { /* shown without reload */ }
    location.reload();
  }

  // askBackfill sends a job's backfill form: with "plan", a dry run whose
  // plan is shown below the form (nothing is recorded); with "create",
  // the backfill itself, and the page reloads to show it.
  async function askBackfill(form, mode) {
    var f = form.elements, job = form.dataset.job;
    var bf = { from: f.from.value.trim(), to: f.to.value.trim(), includeFailed: f.includeFailed.checked,
      rate: f.rate.value === "" ? 0 : Number(f.rate.value), dryRun: mode === "plan" };
    var what = (mode === "plan" ? "dry run of a backfill of " : "backfill ") + job;
    var got = await post(what, { action: "backfill-create", job: job, backfill: bf });
    if (!got) { return; }
    var resp = got[0], body = got[1];
    if (resp.status === 409 && body && body.code === "BACKFILL_CONFLICT") {
      flash("conflict", "Not asked: " + job + " has a running backfill (" + ((body.details || {}).running) +
        "): wait for it, or cancel it.");
      return;
    }
    if (!resp.ok) {
      flash("error", what + " refused (" + resp.status + "): " + ((body && body.message) || resp.statusText));
      return;
    }
    if (mode === "plan") {
      showPlan(job, (body && body.slots) || []);
      return;
    }
    try {
      sessionStorage.setItem(FLASH, "Asked for backfill " + body.id + " of " + job + ": " + body.total +
        " slot(s); a replica that serves it drives it.");
    } catch (e) { /* shown without reload */ }
    location.reload();
  }

  // showPlan shows a dry run's plan: the slots by outcome, then each
  // slot (text only: never innerHTML).
  function showPlan(job, slots) {
    var box = byId("backfill-plan"), by = {}, order = [], lines = [];
    for (var i = 0; i < slots.length; i++) {
      var o = slots[i].outcome;
      if (!(o in by)) { by[o] = 0; order.push(o); }
      by[o]++;
      lines.push(utc(slots[i].slot) + "  " + o);
    }
    var summary = order.map(function (o) { return o + " " + by[o]; }).join(" · ");
    box.textContent = "";
    var p = document.createElement("p");
    p.className = "plan-summary";
    p.textContent = "Dry run of " + job + ": " + slots.length + " slot(s)" + (summary ? ": " + summary : "") +
      ". Nothing was recorded.";
    var d = document.createElement("details"), s = document.createElement("summary"), pre = document.createElement("pre");
    s.textContent = "each slot";
    pre.textContent = lines.join("\n");
    d.appendChild(s);
    d.appendChild(pre);
    box.appendChild(p);
    box.appendChild(d);
    box.hidden = false;
    flash("ok", "Dry run of " + job + ": " + slots.length + " slot(s), shown below the form.");
  }

  // refresh reloads the page for fresh state, unless the operator is
  // busy with it: typing a note, an action under way or to confirm, a
  // message just shown.
  function refresh() {
    var note = byId("note"), until = byId("until");
    var typing = note && (document.activeElement === note || note.value !== "");
    var bf = document.querySelector("form.backfill-form");
    if (bf && (bf.contains(document.activeElement) || bf.elements.from.value !== "" || bf.elements.to.value !== "")) {
      typing = true; // a backfill being asked for, or its plan read
    }
    if (!busy && !confirming && !typing && Date.now() - lastFlash > REFRESH_EVERY && !document.hidden) {
      location.reload();
      return;
    }
    setTimeout(refresh, REFRESH_EVERY);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var controls = byId("controls");
    if (controls) { controls.hidden = false; }
    var saved = "";
    try { saved = sessionStorage.getItem(FLASH) || ""; sessionStorage.removeItem(FLASH); } catch (e) { saved = ""; }
    if (saved) { flash("ok", saved); }

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
    var acks = document.querySelectorAll("tr.alert .ack-actions");
    for (var j = 0; j < acks.length; j++) {
      acks[j].hidden = false;
      acks[j].addEventListener("click", function (ev) {
        var b = ev.target.closest("button[data-step]");
        if (b) { askAck(this, b.dataset.step); }
      });
    }
    var forms = document.querySelectorAll("form.schedule-form");
    for (var k = 0; k < forms.length; k++) {
      forms[k].hidden = false;
      forms[k].addEventListener("submit", function (ev) {
        ev.preventDefault();
        saveSchedule(this);
      });
    }
    var dels = document.querySelectorAll(".delete-actions");
    for (var m = 0; m < dels.length; m++) {
      dels[m].hidden = false;
      dels[m].addEventListener("click", function (ev) {
        var b = ev.target.closest("button[data-step]");
        if (b) { askDelete(this, b.dataset.step); }
      });
    }
    var bfs = document.querySelectorAll(".backfill-actions");
    for (var n = 0; n < bfs.length; n++) {
      bfs[n].hidden = false;
      bfs[n].addEventListener("click", function (ev) {
        var b = ev.target.closest("button[data-step]");
        if (b) { askCancelBackfill(this, b.dataset.step); }
      });
    }
    var bff = document.querySelector("form.backfill-form");
    if (bff) {
      bff.hidden = false;
      bff.addEventListener("submit", function (ev) {
        ev.preventDefault();
        var mode = ev.submitter && ev.submitter.dataset.submit === "create" ? "create" : "plan";
        askBackfill(this, mode);
      });
    }
    if (document.body.dataset.refresh !== "off") { setTimeout(refresh, REFRESH_EVERY); }
  });
})();
