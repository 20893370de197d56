/* global fetch */
// The providers tab: create and delete providers with JSON requests (the AJAX endpoints), then
// reload the page; errors are shown with the portal's own message.
(function () {
  'use strict';
  var error = document.getElementById('catalogue-error');
  var show = function (body) {
    error.textContent = (body && ((body.error && body.error.human_message) || body.human_message)) || 'The change could not be saved';
    error.hidden = false;
  };
  var send = function (url, body) {
    return fetch(url, {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
      .then(function (res) {
        return res.json().then(function (json) {
          if (res.ok) window.location.reload();
          else show(json);
        });
      })
      .catch(function () {
        show(null);
      });
  };
  var form = document.getElementById('provider-form');
  if (form)
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var models;
      try {
        models = JSON.parse(form.models.value);
      } catch {
        show({ human_message: 'Models must be a JSON list' });
        return;
      }
      var body = {
        name: form.name.value,
        protocol: form.protocol.value,
        base_url: form.base_url.value,
        region: form.region.value,
        priority: form.priority.value,
        models: models,
      };
      if (form.api_key.value) body.api_key = form.api_key.value;
      send('/dashboard/admin/providers', body);
    });
  document.querySelectorAll('[data-delete-provider]').forEach(function (button) {
    button.addEventListener('click', function () {
      send('/dashboard/admin/providers/' + button.getAttribute('data-delete-provider') + '/delete', {});
    });
  });
})();
