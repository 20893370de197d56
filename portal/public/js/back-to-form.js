// The error page of a refused form: its "Back to the form" link goes back in the history, where
// the browser restores what was typed, rather than loading the form again empty. Without
// JavaScript the link still loads the form.
(function () {
  'use strict';
  var link = document.querySelector('[data-back-to-form]');
  if (!link || window.history.length < 2) return;
  link.addEventListener('click', function (event) {
    event.preventDefault();
    window.history.back();
  });
})();
