// trails console: a session's step opened in a side panel without leaving the page.
// Without this script every "Details" link opens the step's own page instead.
(function () {
  "use strict";
  var panel = document.getElementById("step-panel");
  if (!panel) { return; }
  var body = panel.querySelector(".panel-body");
  var opener = null;

  function close() {
    if (panel.hidden) { return; }
    panel.hidden = true;
    body.innerHTML = "";
    document.body.classList.remove("panel-open");
    if (opener) { opener.focus(); }
  }

  function open(link) {
    var url = link.href + (link.href.indexOf("?") < 0 ? "?" : "&") + "part=panel";
    fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (answer) {
        if (!answer.ok) { throw new Error("status " + answer.status); }
        return answer.text();
      })
      .then(function (html) {
        if (!panel.contains(link)) { opener = link; }
        body.innerHTML = html;  // the server's own page, every recorded value escaped
        panel.hidden = false;
        document.body.classList.add("panel-open");
        var title = panel.querySelector("#step-title");
        (title || panel.querySelector("button.close")).focus();
      })
      .catch(function () { window.location.href = link.href; });
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a.open-step") : null;
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) {
      return;
    }
    event.preventDefault();
    open(link);
  });
  panel.querySelector("button.close").addEventListener("click", close);
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && !panel.hidden) {
      event.preventDefault();
      close();
    }
  });
})();
