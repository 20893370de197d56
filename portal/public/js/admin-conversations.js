/* global fetch */
// The conversation page's Delete button: DELETE /api/admin/conversations/{id} (forms cannot send
// DELETE), then back to the list.
(function () {
  'use strict';
  var button = document.querySelector('[data-delete-conversation]');
  if (!button) return;
  var error = document.getElementById('conversation-error');
  button.addEventListener('click', function () {
    fetch('/api/admin/conversations/' + button.getAttribute('data-delete-conversation'), {
      method: 'DELETE',
      headers: { accept: 'application/json' },
    })
      .then(function (res) {
        return res.json().then(function (body) {
          if (res.ok) window.location.assign('/dashboard/admin/conversations?deleted=1');
          else {
            error.textContent = (body.error && body.error.human_message) || body.human_message || 'The conversation could not be deleted';
            error.hidden = false;
          }
        });
      })
      .catch(function () {
        error.textContent = 'The portal could not be reached; try again';
        error.hidden = false;
      });
  });
})();
