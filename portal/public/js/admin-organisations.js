/* global fetch */
// The organisations page: Delete buttons send DELETE (forms cannot), and the merge form lists the
// members of the chosen organisations (from merge-data) with a role choice each and a billing
// user picker. Without this script the page still lists, creates, edits and merges.
(function () {
  'use strict';
  var error = document.getElementById('org-error');
  var show = function (message) {
    error.textContent = message;
    error.hidden = false;
  };
  document.querySelectorAll('[data-delete-org]').forEach(function (button) {
    button.addEventListener('click', function () {
      var id = button.getAttribute('data-delete-org');
      fetch('/dashboard/admin/organisations/' + id, { method: 'DELETE', headers: { accept: 'application/json' } })
        .then(function (res) {
          return res.json().then(function (body) {
            if (res.ok) window.location.assign('/dashboard/admin/organisations?notice=deleted');
            else show((body.error && body.error.human_message) || body.human_message || 'The organisation could not be deleted');
          });
        })
        .catch(function () {
          show('The portal could not be reached; try again');
        });
    });
  });
  var form = document.getElementById('merge-form');
  if (!form) return;
  var box = document.getElementById('merge-members');
  var roles = ['member', 'department_admin', 'org_admin', 'platform_admin', 'owner'];
  var refresh = function () {
    var ids = [form.target_org_id.value].concat(
      form.source_org_ids.value
        .split(',')
        .map(function (s) {
          return s.trim();
        })
        .filter(function (s) {
          return /^[1-9][0-9]*$/.test(s);
        }),
    );
    Promise.all(
      ids.map(function (id) {
        return fetch('/dashboard/admin/organisations/' + id + '/merge-data', { headers: { accept: 'application/json' } }).then(
          function (r) {
            return r.ok ? r.json() : null;
          },
        );
      }),
    ).then(function (all) {
      box.textContent = '';
      all.forEach(function (org) {
        if (!org) return;
        org.members.forEach(function (m) {
          var row = document.createElement('div');
          row.className = 'form-row';
          var label = document.createElement('label');
          label.textContent = m.display_name + ' <' + m.email + '> (' + org.name + ')';
          var select = document.createElement('select');
          select.name = 'role_' + m.id;
          var keep = document.createElement('option');
          keep.value = '';
          keep.textContent = 'keep ' + m.role.replace('_', ' ');
          select.appendChild(keep);
          roles.forEach(function (r) {
            var option = document.createElement('option');
            option.value = r;
            option.textContent = r.replace('_', ' ');
            select.appendChild(option);
          });
          var cell = document.createElement('div');
          cell.appendChild(label);
          cell.appendChild(select);
          row.appendChild(cell);
          box.appendChild(row);
        });
      });
    });
  };
  form.target_org_id.addEventListener('change', refresh);
  form.source_org_ids.addEventListener('change', refresh);
})();
