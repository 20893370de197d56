import { expect, test } from 'vitest';
import { actionMessage } from './mailer.js';

test("an email's HTML keeps the text's paragraphs and line breaks, escaped", () => {
  const message = actionMessage(
    'ada@example.com',
    'Your payment failed',
    'Your card payment of $10.00 failed: <declined>\n\nNothing was added to your wallet.',
    'Open billing',
    'https://portal.example.com/dashboard/billing',
    'Line one\nline two',
  );
  expect(message.html).toBe(
    '<p>Your card payment of $10.00 failed: &#60;declined&#62;</p><p>Nothing was added to your wallet.</p>' +
      '<p><a href="https://portal.example.com/dashboard/billing">Open billing</a></p><p>Line one<br>line two</p>',
  );
  expect(message.text).toContain('failed: <declined>\n\nNothing was added');
});
