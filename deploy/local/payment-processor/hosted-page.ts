// The hosted checkout page of the local test processor: what the payer sees between the
// portal's "Continue to payment" and the confirmation. Plain HTML, no script, clearly labelled
// as a test processor so nobody mistakes it for a real payment page.
import type { CheckoutSession } from './objects.js';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const money = (cents: number) => `$${Math.floor(cents / 100).toLocaleString('en-US')}.${String(cents % 100).padStart(2, '0')}`;

/** The page for an open session; `error` after a refused card. */
export function hostedPageHtml(session: CheckoutSession, error?: string): string {
  const payment = session.mode === 'payment';
  const rows = session.line_items
    .map((item) => `<tr><td>${escapeHtml(item.name)}</td><td class="num">${money(item.unit_amount * item.quantity)}</td></tr>`)
    .join('');
  const summary = payment
    ? `<table>${rows}<tr class="total"><td>Total charged</td><td class="num" data-testid="total">${money(session.amount_total ?? 0)}</td></tr></table>`
    : '<p>Save a card for later payments. Nothing is charged now.</p>';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${payment ? 'Pay' : 'Save a card'} · Local test processor</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;background:#f4f5f7;color:#1d2330;margin:0}
.banner{background:#8a4b00;color:#fff;padding:.6rem 1rem;text-align:center;font-weight:600}
main{max-width:28rem;margin:2rem auto;background:#fff;border-radius:12px;padding:1.5rem 2rem;box-shadow:0 2px 12px #0001}
table{width:100%;border-collapse:collapse;margin:1rem 0}td{padding:.35rem 0;border-bottom:1px solid #e4e6eb}
.num{text-align:right}.total td{font-weight:700;border-bottom:none}
label{display:block;margin-top:.8rem;font-weight:600}input{width:100%;box-sizing:border-box;padding:.55rem;border:1px solid #b8bdc7;border-radius:6px;font-size:1rem}
.row{display:flex;gap:.8rem}.row>div{flex:1}
button{margin-top:1.2rem;width:100%;padding:.75rem;border:0;border-radius:6px;background:#2f5bea;color:#fff;font-size:1rem;font-weight:600;cursor:pointer}
.error{background:#fde8e8;color:#8c1d1d;padding:.6rem .8rem;border-radius:6px}.hint{color:#5b6270;font-size:.9rem}
</style></head><body>
<div class="banner" role="note">LOCAL TEST PROCESSOR — test mode, no real card is charged and no money moves</div>
<main>
<h1>${payment ? 'Complete your payment' : 'Save a card'}</h1>
${summary}
${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ''}
<form method="post" action="/pay/${encodeURIComponent(session.id)}">
<label for="card_number">Card number</label>
<input id="card_number" name="card_number" inputmode="numeric" autocomplete="off" value="4242 4242 4242 4242" required>
<div class="row"><div><label for="expiry">Expiry</label><input id="expiry" name="expiry" value="12 / 34" required></div>
<div><label for="cvc">CVC</label><input id="cvc" name="cvc" value="123" required></div></div>
<label for="name">Name on card</label><input id="name" name="name" value="Test Payer">
<button type="submit">${payment ? `Pay ${money(session.amount_total ?? 0)}` : 'Save card'}</button>
</form>
<p class="hint">Test cards: 4242 4242 4242 4242 succeeds; 4000 0000 0000 0002 is declined;
4000 0000 0000 0341 saves but later charges are declined; 4000 0027 6000 3184 needs authentication off-session.</p>
${session.cancel_url ? `<p><a href="${escapeHtml(session.cancel_url)}">Cancel and go back</a></p>` : ''}
</main></body></html>`;
}

/** The page for a session that can no longer be paid. */
export function closedPageHtml(session: CheckoutSession): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Checkout closed · Local test processor</title></head>
<body><p><strong>LOCAL TEST PROCESSOR</strong></p><p>This checkout is ${escapeHtml(session.status)} and cannot be paid.</p>
<p><a href="${escapeHtml(session.success_url.replace('{CHECKOUT_SESSION_ID}', session.id))}">Return to the portal</a></p></body></html>`;
}
