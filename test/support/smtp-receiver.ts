// A real SMTP server (smtp-server) on loopback that keeps every message it receives, so tests
// read the portal's email the way a mail server would get it.
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** One received message: envelope recipients and the raw RFC 5322 text. */
export interface ReceivedMail {
  to: string[];
  raw: string;
}

/**
 * What the receiver does with a message: accept it; refuse it (550, as a server that will not
 * take it); or hold its reply until `release()` (a slow server: the sender waits).
 */
export type SmtpBehaviour = 'accept' | 'refuse' | 'hold';

/** A running receiver. */
export interface SmtpReceiver {
  url: string;
  messages: ReceivedMail[];
  behaviour: SmtpBehaviour;
  /** Messages whose reply is held (behaviour `hold`). */
  held(): number;
  /** Accepts every held message. */
  release(): void;
  /** The first link in the last message to `to` whose URL contains `pathPart`. */
  linkTo(to: string, pathPart: string): string | undefined;
  close(): Promise<void>;
}

/** Decodes quoted-printable soft breaks and escapes (nodemailer wraps long lines that way). */
function decodeQuotedPrintable(text: string): string {
  return text.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/** Starts a receiver on 127.0.0.1 (any free port), without authentication or TLS. */
export async function startSmtpReceiver(): Promise<SmtpReceiver> {
  const messages: ReceivedMail[] = [];
  const held: (() => void)[] = [];
  const receiver = { behaviour: 'accept' as SmtpBehaviour };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const accept = () => {
          messages.push({ to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()), raw: Buffer.concat(chunks).toString('utf8') });
          callback();
        };
        if (receiver.behaviour === 'refuse') callback(Object.assign(new Error('Mailbox unavailable'), { responseCode: 550 }));
        else if (receiver.behaviour === 'hold') held.push(accept);
        else accept();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    get behaviour() {
      return receiver.behaviour;
    },
    set behaviour(behaviour: SmtpBehaviour) {
      receiver.behaviour = behaviour;
    },
    held: () => held.length,
    release: () => {
      for (const accept of held.splice(0)) accept();
    },
    linkTo: (to, pathPart) => {
      const message = messages.filter((m) => m.to.includes(to.toLowerCase())).at(-1);
      if (!message) return undefined;
      return decodeQuotedPrintable(message.raw)
        .match(/https?:\/\/[^\s"<>]+/g)
        ?.find((link) => link.includes(pathPart));
    },
    close: () => {
      held.splice(0);
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
