/* global fetch */
// Follows an export job on its page: asks for its state every second until it ends, and fills in
// the state, the progress bar, the counts and the download link (the page is complete without it).
(function () {
  'use strict';
  var box = document.getElementById('export-status');
  if (!box) return;
  var ended = { succeeded: true, failed: true, cancelled: true };
  var show = function (job) {
    box.setAttribute('data-state', job.state);
    var state = box.querySelector('[data-testid=export-state]');
    state.textContent = job.state;
    state.className = 'status status-' + job.state;
    box.querySelector('[data-testid=export-progress]').value = job.progress;
    box.querySelector('[data-testid=export-counts]').textContent =
      job.rows_written.toLocaleString('en-US') +
      (job.total_rows === null ? '' : ' of ' + job.total_rows.toLocaleString('en-US')) +
      ' rows · ' +
      (job.bytes_written / 1024).toFixed(1) +
      ' KiB';
    var link = box.querySelector('[data-testid=export-download]');
    if (job.download_url) {
      link.href = job.download_url;
      link.hidden = false;
    }
    var cancel = box.querySelector('[data-testid=export-cancel]');
    if (cancel && ended[job.state]) cancel.closest('form').remove();
  };
  var poll = function () {
    fetch('/dashboard/reports/exports/' + box.getAttribute('data-job'), { headers: { accept: 'application/json' } })
      .then(function (res) {
        return res.json();
      })
      .then(function (body) {
        show(body.job);
        if (!ended[body.job.state]) setTimeout(poll, 1000);
      })
      .catch(function () {
        setTimeout(poll, 3000);
      });
  };
  if (!ended[box.getAttribute('data-state')]) setTimeout(poll, 500);
})();
