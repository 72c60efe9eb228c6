// Live updates: one EventSource per viewer; when the digest moves, swap the main region in place.
(function () {
  "use strict";
  var status = document.getElementById("connection");
  var main = document.getElementById("content");
  var shown = Number(document.body.dataset.version);
  var fetching = false, again = false;

  function say(text) { status.textContent = text; }

  function fragmentUrl() {
    var url = new URL(window.location.href);
    url.searchParams.set("fragment", "1");
    return url.toString();
  }

  function refresh(version) {
    if (fetching) { again = true; return; }
    fetching = true;
    fetch(fragmentUrl(), {headers: {"Accept": "text/html"}}).then(function (response) {
      if (!response.ok) { throw new Error(String(response.status)); }
      return response.text();
    }).then(function (html) {
      var focused = document.activeElement && document.activeElement.id;
      main.innerHTML = html;
      shown = version;
      document.body.dataset.version = String(version);
      if (focused) {
        var again_ = document.getElementById(focused);
        if (again_) { again_.focus({preventScroll: true}); }
      }
    }).catch(function (err) {
      say("Live updates: could not refresh this page (" + err.message + "); retrying on the next change");
    }).finally(function () {
      fetching = false;
      if (again) { again = false; refresh(shown + 1); }
    });
  }

  if (!window.EventSource) { say("Live updates: not supported by this browser; reload to refresh"); return; }
  var source = null;

  function connect() {
    source = new EventSource("/events");
    source.addEventListener("open", function () { say("Live updates: connected"); });
    source.addEventListener("digest", function (event) {
      var data = JSON.parse(event.data);
      say(data.staleSince ? "Live updates: connected, but the cluster is not answering (stale)" : "Live updates: connected");
      if (data.version !== shown) { refresh(data.version); }
    });
    source.addEventListener("error", function () {
      say("Live updates: disconnected from the dashboard; the page is stale, reconnecting");
    });
  }

  // A page left for another keeps its stream open in the back/forward cache, and browsers allow
  // six connections per host: close it on the way out, reopen it on the way back.
  window.addEventListener("pagehide", function () { if (source) { source.close(); source = null; } });
  window.addEventListener("pageshow", function () { if (!source) { connect(); } });
  connect();
})();
