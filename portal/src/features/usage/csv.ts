// CSV for exports (RFC 4180): fields with a comma, quote or line break are quoted, quotes doubled.
// A field starting with = + - @ (or a tab/carriage return) is prefixed with ' so a spreadsheet
// never runs it as a formula (model names and key names are chosen by users).

/** One CSV line (with CRLF) of `fields`. */
export function csvLine(fields: readonly (string | number | boolean | null | undefined)[]): string {
  return `${fields.map(csvField).join(',')}\r\n`;
}

function csvField(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
