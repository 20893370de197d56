// Well-formed UTF-16: text without half a surrogate pair. Such text cannot be encoded as UTF-8
// (PostgreSQL stores U+FFFD or refuses it in JSON; strict JSON parsers refuse its escape), so the
// places that store, refuse or quote text ask these two questions — through the ES2024 built-ins
// (Node 20+), typed here because the project's lib is ES2023.
type Es2024String = string & { isWellFormed(): boolean; toWellFormed(): string };

/** The text holds no lone surrogate. */
export function isWellFormed(text: string): boolean {
  return (text as Es2024String).isWellFormed();
}

/** The text with each lone surrogate replaced by U+FFFD (what its UTF-8 encoding would give). */
export function toWellFormed(text: string): string {
  return (text as Es2024String).toWellFormed();
}

/**
 * Text a PostgreSQL text column keeps as sent: no NUL character (refused, a 500 if it got there)
 * and no half a surrogate pair (stored as U+FFFD, the text changed without a word).
 */
export function isStorableText(text: string): boolean {
  return !text.includes('\u0000') && isWellFormed(text);
}

/**
 * Explicit direction embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069): in a name
 * other people read, they make it display differently than it is written ("Alice\u202Enimda"
 * reads "Aliceadmin"), which is how names are spoofed. Right-to-left text needs none of them.
 */
const directionControls = /[\u202A-\u202E\u2066-\u2069]/;

/** The text holds an explicit direction control (see directionControls). */
export function hasDirectionControls(text: string): boolean {
  return directionControls.test(text);
}

/**
 * Characters that show nothing: spaces of every kind, format characters (zero-width space and
 * joiners, the BOM, soft hyphen…) and the fillers and blanks that render as empty (Hangul fillers,
 * the blank Braille pattern). A name of only these looks empty in a table or an email.
 */
const invisible = /[\p{Z}\p{Cf}\s\u115F\u1160\u3164\uFFA0\u2800]/gu;

/** What reads as a character: a letter, digit, symbol (emoji included) or punctuation mark. */
const readable = /[\p{L}\p{N}\p{S}\p{P}]/u;

/**
 * The text shows at least one character: a readable one once the invisible ones are set aside.
 * Marks alone (variation selectors, combining marks, U+034F) show nothing, and the fillers that
 * Unicode counts as letters (U+3164) are among the invisible ones.
 */
export function hasVisibleCharacter(text: string): boolean {
  return readable.test(text.replace(invisible, ''));
}

/**
 * A name another system gave (an identity provider's `name` claim), made fit to store and show: no
 * direction controls, no NUL, no half surrogate, trimmed and cut to `max` characters. It cannot be
 * refused like a name typed in a form, so it is cleaned instead; empty afterwards: undefined.
 */
export function plainName(text: string, max: number): string | undefined {
  const cleaned = toWellFormed(text).replace(new RegExp(directionControls.source, 'g'), '').replaceAll('\u0000', '').trim();
  const cut = [...cleaned].slice(0, max).join('').trim();
  return hasVisibleCharacter(cut) ? cut : undefined;
}
