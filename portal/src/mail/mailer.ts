// Outgoing email through nodemailer: SMTP when SVC_SMTP_URL is set; otherwise each message is
// written to SVC_DATA_DIR/outbox/ as an .eml file and its link announced on the console, so a
// newcomer can verify an account without a mail server. Links never go to the JSON log.
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import nodemailer, { type Transporter } from 'nodemailer';

/** One message: plain text plus a simple HTML version, and the link it carries. */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** The action link inside, announced in outbox mode. */
  link: string;
}

/** Sends the portal's email. */
export interface Mailer {
  /** Sends now; rejects when the mail server refuses or cannot be reached (jobs, which retry). */
  send(message: MailMessage): Promise<void>;
  /**
   * Sends after the caller has answered: what a person asked for — a sign-up, an invitation, a
   * payment's receipt — neither waits for the mail server nor fails with it (an outside probe's
   * slow server held a sign-up 30 s; a server down answered it 500 with the account made). Never
   * throws; a failure is logged naming `what`.
   */
  sendLater(message: MailMessage, what: string): void;
  /** Resolves once every message given to sendLater was sent or failed (shutdown, tests). */
  settled(): Promise<void>;
  close(): void;
}

/**
 * How long an SMTP server may take, unless the URL says (nodemailer reads its options from the
 * URL's query, e.g. `?socketTimeout=60000`): nodemailer's own defaults let a server that stops
 * answering hold a message for ten minutes.
 */
const smtpTimeouts = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };

/** The SMTP URL with smtpTimeouts added where it names none of its own. */
export function withSmtpTimeouts(smtpUrl: string): string {
  const url = new URL(smtpUrl);
  for (const [name, ms] of Object.entries(smtpTimeouts)) if (!url.searchParams.has(name)) url.searchParams.set(name, String(ms));
  return url.toString();
}

/** The mailer the settings ask for. `announce` prints outbox links (console in main.ts). */
export function createMailer(options: {
  smtpUrl: string | undefined;
  from: string;
  dataDir: string;
  announce: (line: string) => void;
  logger: { error(details: object, message: string): void };
}): Mailer {
  const deliver = options.smtpUrl ? smtpDelivery(options.smtpUrl, options.from) : outboxDelivery(options);
  const pending = new Set<Promise<void>>();
  return {
    send: deliver.send,
    sendLater: (message, what) => {
      const sending = deliver
        .send(message)
        .catch((error: unknown) => options.logger.error({ err: error }, `${what} could not be sent`))
        .finally(() => pending.delete(sending));
      pending.add(sending);
    },
    settled: async () => {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
    close: deliver.close,
  };
}

type Delivery = Pick<Mailer, 'send' | 'close'>;

function smtpDelivery(smtpUrl: string, from: string): Delivery {
  const transport: Transporter = nodemailer.createTransport(withSmtpTimeouts(smtpUrl));
  return {
    send: async (m) => {
      await transport.sendMail({ from, to: m.to, subject: m.subject, text: m.text, html: m.html });
    },
    close: () => transport.close(),
  };
}

function outboxDelivery(options: { from: string; dataDir: string; announce: (line: string) => void }): Delivery {
  const outbox = resolve(options.dataDir, 'outbox');
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    send: async (m) => {
      const info = await transport.sendMail({ from: options.from, to: m.to, subject: m.subject, text: m.text, html: m.html });
      await mkdir(outbox, { recursive: true });
      const file = join(outbox, `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomBytes(3).toString('hex')}.eml`);
      await writeFile(file, info.message as Buffer, { mode: 0o600 });
      options.announce(`email to ${m.to} ("${m.subject}") written to ${file}\n  link: ${m.link}`);
    },
    close: () => transport.close(),
  };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Text as HTML paragraphs: a blank line starts a new paragraph, a single line break stays one (HTML collapses both). */
function paragraphs(text: string): string {
  return text
    .split(/\n{2,}/)
    .filter((part) => part.trim() !== '')
    .map((part) => `<p>${escapeHtml(part).replaceAll('\n', '<br>')}</p>`)
    .join('');
}

/** A message with one call to action: text and HTML from the same words. */
export function actionMessage(to: string, subject: string, intro: string, action: string, link: string, outro: string): MailMessage {
  return {
    to,
    subject,
    link,
    text: `${intro}\n\n${action}: ${link}\n\n${outro}\n`,
    html: `${paragraphs(intro)}<p><a href="${escapeHtml(link)}">${escapeHtml(action)}</a></p>${paragraphs(outro)}`,
  };
}
