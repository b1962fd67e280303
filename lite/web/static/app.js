// Refreshes the overview's queues every two seconds while the page is
// visible. The fragment is HTML the server rendered and escaped; no job
// text is ever handled as markup here.
"use strict";
(function () {
  const live = document.getElementById("live");
  if (!live) return;
  const src = live.dataset.refresh;
  async function refresh() {
    if (document.hidden) return;
    try {
      const r = await fetch(src, { credentials: "same-origin", cache: "no-store" });
      if (r.ok) live.innerHTML = await r.text();
    } catch (e) {
      // The server went away for a moment; the next tick tries again.
    }
  }
  setInterval(refresh, 2000);
})();
