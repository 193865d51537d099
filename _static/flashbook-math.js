// A display formula wider than the column scrolls sideways. MathJax's formulas are kept out of the tab order
// (hundreds of them would stand between a keyboard reader and the controls), so a formula that scrolls, and only
// such a one, is made a tab stop here: a keyboard reader can reach it and scroll it with the arrow keys. Run when
// MathJax has typeset the page and again when the window's width changes.
(function () {
  "use strict";
  var SELECTOR = 'mjx-container[display="true"], div.math';
  function mark() {
    document.querySelectorAll(SELECTOR).forEach(function (el) {
      var scrolls = el.scrollWidth > el.clientWidth + 1;
      if (scrolls && !el.hasAttribute("tabindex")) {
        el.setAttribute("tabindex", "0");
        el.setAttribute("data-fb-scroll", "");
      } else if (!scrolls && el.hasAttribute("data-fb-scroll")) {
        el.removeAttribute("tabindex");
        el.removeAttribute("data-fb-scroll");
      }
    });
  }
  var timer = null;
  function later() { clearTimeout(timer); timer = setTimeout(mark, 150); }
  function start(tries) {
    var mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) { mj.startup.promise.then(mark); }
    else if (tries > 0) { setTimeout(function () { start(tries - 1); }, 200); }   // MathJax still loading
    else { mark(); }
  }
  window.addEventListener("load", function () { start(50); });
  window.addEventListener("resize", later);
})();
