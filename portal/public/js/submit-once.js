/* global HTMLFormElement */
// Forms marked data-submit-once are sent once per page view. They are the forms that make a secret
// and show it only in their answer (a new API key, a new API token): a double click would send two
// requests, and the browser shows the answer to the second, so the secret of the first is never seen.
// The server also refuses a repeat of the new-key form (its one-use token); this keeps the first
// answer on screen. A page restored from the back/forward cache gets its buttons back.
(function () {
  'use strict';
  document.addEventListener('submit', function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.hasAttribute('data-submit-once')) return;
    if (form.getAttribute('data-sent') === 'true') {
      event.preventDefault();
      return;
    }
    form.setAttribute('data-sent', 'true');
    form.querySelectorAll('button[type=submit], button:not([type])').forEach(function (button) {
      button.setAttribute('aria-disabled', 'true');
      button.classList.add('is-busy');
    });
  });
  window.addEventListener('pageshow', function (event) {
    if (!event.persisted) return;
    document.querySelectorAll('form[data-submit-once][data-sent]').forEach(function (form) {
      form.removeAttribute('data-sent');
      form.querySelectorAll('.is-busy').forEach(function (button) {
        button.removeAttribute('aria-disabled');
        button.classList.remove('is-busy');
      });
    });
  });
})();
