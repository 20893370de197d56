/* global HTMLSelectElement, HTMLInputElement */
// The schedule form's day fields follow its cadence: only the one the cadence uses is enabled (a
// disabled field is not sent, and the server refuses a day field the cadence does not use), and it
// starts on a day (Monday, the 1st) when left empty. Without script both fields are sent and a
// weekly or monthly schedule asks for its day, as the server's answer says.
(function () {
  'use strict';
  var cadence = document.getElementById('cadence');
  var weekday = document.getElementById('weekday');
  var monthDay = document.getElementById('month_day');
  if (!(cadence instanceof HTMLSelectElement) || !(weekday instanceof HTMLSelectElement) || !(monthDay instanceof HTMLInputElement)) return;
  function follow() {
    weekday.disabled = cadence.value !== 'weekly';
    monthDay.disabled = cadence.value !== 'monthly';
    if (!weekday.disabled && weekday.value === '') weekday.value = '1';
    if (!monthDay.disabled && monthDay.value === '') monthDay.value = '1';
  }
  cadence.addEventListener('change', follow);
  follow();
})();
