/* page.js — placeholder until the page script lands */
"use strict";
document.getElementById("app").textContent = JSON.parse(document.getElementById("kprof-data").textContent).title;
document.documentElement.dataset.drawn = "1";
window.kprofDrawnMs = performance.now();
