import { expect, test } from 'vitest';
import { mailDestination } from './banner.js';

test('the banner names where emails go: the mail server without its credentials, else the outbox', () => {
  expect(mailDestination(undefined, '/data')).toBe('emails go to /data/outbox');
  expect(mailDestination('smtps://mailer:s3cret@mail.example.com:465', '/data')).toBe(
    'emails go to the mail server smtps://mail.example.com:465',
  );
});
