// On a phone the dashboard menu is one row that scrolls sideways: it starts scrolled to the page
// being shown, so "Settings" (the 20th link) is in view rather than 2,600 px to the right.
// On a wide screen the menu is a column and nothing scrolls.
(function () {
  'use strict';
  var nav = document.querySelector('.side-nav');
  var current = nav && nav.querySelector('[aria-current="page"]');
  if (!nav || !current || nav.scrollWidth <= nav.clientWidth) return;
  nav.scrollLeft = Math.max(0, current.offsetLeft - nav.offsetLeft - (nav.clientWidth - current.offsetWidth) / 2);
})();
