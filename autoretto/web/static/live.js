// Progressive enhancement for the page of `autoretto serve`: every button works without this.
// It fetches the same page again now and then (often while something is going out) and puts
// the fresh parts marked data-live in place of the old, so the page shows a post going out
// without a reload. No HTML is built here: the parts come escaped from the server.
(function () {
  "use strict";
  var parser = new DOMParser();

  function seconds() {
    var wanted = parseInt(document.body.getAttribute("data-poll"), 10);
    return wanted > 0 ? wanted : 0;
  }

  function busyWith(part) {
    var active = document.activeElement;
    return active && part.contains(active) && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName);
  }

  function refresh() {
    fetch(window.location.pathname, { credentials: "same-origin", cache: "no-store" })
      .then(function (answer) {
        if (!answer.ok) { throw new Error("status " + answer.status); }
        return answer.text();
      })
      .then(function (text) {
        var fresh = parser.parseFromString(text, "text/html");
        document.querySelectorAll("[data-live][id]").forEach(function (part) {
          var replacement = fresh.getElementById(part.id);
          if (replacement && !busyWith(part)) { part.replaceWith(document.importNode(replacement, true)); }
        });
        var poll = fresh.body && fresh.body.getAttribute("data-poll");
        if (poll) { document.body.setAttribute("data-poll", poll); }
      })
      .catch(function () { /* the server is restarting, or the session ended: try later */ })
      .then(later);
  }

  function later() {
    if (seconds() > 0) { window.setTimeout(refresh, seconds() * 1000); }
  }

  later();
}());
