/* trails console: live pages. The sessions list (first page, no filter) inserts the new
   sessions the server announces; a session's page redraws its "Steps so far". Both listen
   to /console/events (server-sent events, within the login's grant); nothing reloads.
   Every text is set with textContent: recorded data, never markup. */
(function () {
  "use strict";
  if (!window.EventSource) { return; }

  function state(text) {
    var line = document.getElementById("live-state");
    if (line) { line.textContent = text; }
  }

  function listen(url, name, handle) {
    var source = new EventSource(url);
    source.addEventListener(name, function (event) { handle(JSON.parse(event.data)); });
    source.addEventListener("open", function () { state("live: following the store"); });
    source.addEventListener("error", function () { state("live: reconnecting…"); });
    window.addEventListener("pagehide", function () { source.close(); });
    return source;
  }

  function badge(outcome) {
    var span = document.createElement("span");
    span.className = "badge s-" + outcome;
    span.textContent = outcome;
    return span;
  }

  function stepsPage(list) {
    listen("/console/events?s=" + encodeURIComponent(list.dataset.session), "steps", function (data) {
      var items = data.steps.map(function (s) {
        var li = document.createElement("li");
        li.dataset.activity = s.activity;
        var when = document.createElement("time");
        when.textContent = s.started;
        li.appendChild(when);
        li.appendChild(document.createTextNode(" " + (s.label || s.activity)));
        if (s.status) { li.appendChild(document.createTextNode(" ")); li.appendChild(badge(s.status)); }
        return li;
      });
      list.replaceChildren.apply(list, items);
      var summary = document.querySelector("details#live > summary");
      var drawnOpen = list.dataset.ended !== "1";  // open when the page was drawn
      if (summary) {
        summary.textContent = "Steps so far (" + (data.more ? "the newest " : "") + items.length + ")" + (!data.ended
          ? " · the session is still open: new steps appear as it records them"
          : drawnOpen ? " · the session has ended: reload for its full report" : "");
      }
    });
  }

  function sessionOf(link) {
    return new URLSearchParams(link.getAttribute("href").split("?")[1] || "").get("s");
  }

  function listPage(table) {
    var body = table.tBodies[0];
    // each new row's cells go under the headers that name them (started, session, ...)
    var heads = table.tHead ? Array.prototype.map.call(table.tHead.rows[0].cells, function (th) {
      return th.textContent.trim().toLowerCase();
    }) : ["started", "session", "principal", "status"];
    var columns = heads.length;
    if (!document.getElementById("live-state")) {
      var line = document.createElement("p");
      line.id = "live-state";
      line.className = "muted";
      line.setAttribute("aria-live", "polite");
      table.parentNode.insertBefore(line, table);
    }
    listen("/console/events", "sessions", function (data) {
      var shown = {};
      Array.prototype.forEach.call(body.querySelectorAll('a[href^="/console/session?s="]'), function (a) {
        shown[sessionOf(a)] = a.closest("tr");
      });
      var first = body.rows[0] || null;
      data.rows.forEach(function (r) {
        var row = shown[r.session];
        if (row) {  // known: its outcome may have changed (open, then ok or failed)
          var old = row.querySelector("span.badge[class*='s-']");
          if (old && r.outcome && old.textContent !== r.outcome) { old.replaceWith(badge(r.outcome)); }
          return;
        }
        row = document.createElement("tr");
        row.className = "live-new";
        row.dataset.session = r.session;
        for (var i = 0; i < columns; i++) {
          var td = document.createElement("td"), what = heads[i] || "";
          if (/session/.test(what)) {
            var a = document.createElement("a");
            a.href = "/console/session?s=" + encodeURIComponent(r.session);
            a.textContent = r.label || r.session.split(":").pop();
            td.appendChild(a);
          } else if (/status|outcome/.test(what)) {
            td.appendChild(badge(r.outcome || "open"));
          } else if (/start/.test(what)) {
            td.textContent = r.started || "";
          } else if (/principal/.test(what)) {
            td.textContent = r.principal || "";
          }
          row.appendChild(td);
        }
        body.insertBefore(row, first);
        shown[r.session] = row;
      });
      Array.prototype.forEach.call(body.querySelectorAll("td[colspan]"), function (td) {
        if (body.rows.length > 1) { td.parentNode.remove(); }  // "No session matches." goes
      });
    });
  }

  function start() {
    var list = document.getElementById("live-steps");
    if (list) {  // an ended session records nothing more: nothing to follow
      if (list.dataset.ended !== "1") { stepsPage(list); }
      return;
    }
    var table = document.querySelector("table.sessions");
    var filtered = Array.from(new URLSearchParams(location.search).entries())
      .some(function (kv) { return kv[1] && !(kv[0] === "page" && kv[1] === "1"); });
    if (table && location.pathname === "/console/" && !filtered) { listPage(table); }
  }

  start();
})();
