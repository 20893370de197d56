// Renders docs/errors.md from the catalogue, so the published table cannot drift from the code
// (docs.test.ts fails when it does). Run as a script: `npm run docs:errors`.
import { pathToFileURL } from 'node:url';
import { ApiError, renderErrorBody } from './api-error.js';
import { catalogueGroups, errorCatalogue, errorTypeForStatus, frameworkStatuses, type ErrorCode, type ErrorGroup } from './catalogue.js';
import { foreignCodes, type ForeignCodeEntry } from './foreign-codes.js';

const groupTitles: Record<ErrorGroup, string> = {
  special: 'Codes with a specific action',
  A: 'Group A: correct the request or resource state',
  B: 'Group B: transient, retry with backoff',
  C: 'Group C: authentication and credentials',
  D: 'Group D: access policy',
};

// Table cells are single-line; a `|` in text would split the cell.
function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

function codeRow(code: ErrorCode, withAction: boolean): string {
  const definition = errorCatalogue[code];
  const cells = [
    `\`${code}\``,
    String(definition.status),
    `\`${definition.type}\``,
    definition.retryable ? 'yes' : 'no',
    cell(definition.message),
  ];
  if (withAction) cells.push(cell(definition.action));
  return `| ${cells.join(' | ')} |`;
}

function groupSection(group: (typeof catalogueGroups)[number]): string[] {
  const codes = Object.keys(group.entries) as ErrorCode[];
  // The special table has one action per code; the lettered groups share one.
  const perCodeAction = !('action' in group);
  const header = ['Code', 'HTTP status', 'Type', 'Retryable', 'Default human message'];
  if (perCodeAction) header.push('Action');
  const lines = [`## ${groupTitles[group.group]}`, ''];
  if ('action' in group) lines.push(`**Action:** ${group.action}`, '');
  lines.push(`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`);
  lines.push(...codes.map((code) => codeRow(code, perCodeAction)), '');
  return lines;
}

function typeTable(): string[] {
  const statuses = [...new Set([...Object.values(errorCatalogue).map((definition) => definition.status), ...frameworkStatuses])].sort(
    (a, b) => a - b,
  );
  return ['| HTTP status | Type |', '|---|---|', ...statuses.map((status) => `| ${status} | \`${errorTypeForStatus(status)}\` |`), ''];
}

// Listed from the data so the prose cannot fall behind a changed retry flag.
function retryableOutsideGroupB(): string {
  const codes = Object.values(errorCatalogue)
    .filter((definition) => definition.retryable && definition.group !== 'B')
    .map((definition) => `\`${definition.code}\``);
  return codes.length > 1 ? `${codes.slice(0, -1).join(', ')} and ${codes.at(-1)}` : codes.join('');
}

function intro(): string[] {
  const example = renderErrorBody(new ApiError('rate_limit_exceeded', { retryAfterSeconds: 30 }), 'req_01HZX3Y4K2Q8T9V7W6B5N4M3P2');
  const total = Object.keys(errorCatalogue).length;
  return [
    '# Error codes',
    '',
    '<!-- Generated from core/errors by `npm run docs:errors`; do not edit by hand. -->',
    '',
    `The gateway, operator and portal share one catalogue of ${total} error codes (how they map to the gateway API: docs/spec-conformance.md §7).`,
    'Automation should act on the HTTP status, `Retry-After` and the structured fields, never on the English text.',
    'Handle codes not listed here safely, and do not automatically repeat operations with side effects.',
    '',
    '## Error body',
    '',
    'Every interface sends the same body, which both the OpenAI and the Anthropic SDKs understand:',
    'the OpenAI SDK reads `error.message`, `error.type`, `error.param` and `error.code`; the Anthropic SDK',
    'reads `type: "error"` and `error.type` / `error.message`. The request ID appears both at the top level and',
    'inside `error`.',
    '',
    '```json',
    JSON.stringify(example, null, 2),
    '```',
    '',
    '- `error.code`: the machine-readable code from the tables below.',
    '- `error.message`: the formatted string `<code> - <human_message>`. It may be split at the first ` - `',
    '  only when the part before it is a code listed here.',
    '- `error.human_message`: user-facing text; the default for each code is listed below, and a specific',
    '  request may carry a more precise one.',
    '- `error.param`: the request field at fault, or `null`.',
    '- `error.retryable`: whether repeating the same request may succeed.',
    '- `error.retry_after_seconds`: present when the server knows how long to wait; mirrors `Retry-After`.',
    '- `error.details`: structured facts behind the message, and always `error_code` (the code again), which',
    '  the Anthropic SDK exposes as `err.errorCode`.',
    '',
    '## Retry headers',
    '',
    '- `Retry-After` (seconds) is sent whenever a wait time is known. It is authoritative.',
    '- `x-should-retry: true|false` is sent on every error. Both SDK families obey it over their own',
    '  rules, which would otherwise auto-retry every 409 and 5xx, including settlement and stream',
    '  failures that must not be repeated.',
    '',
    '## How status, type and retry advice were chosen',
    '',
    'The gateway API fixes only `billing_limit_reached` (HTTP 403). Every other status was chosen once, by meaning:',
    '',
    '- Group C (credentials) is always 401 and Group D (access policy) always 403.',
    '- Group B (transient) is 429 for rate and capacity caps, 500 for failures inside the gateway, 502 for',
    '  bad or unsafe upstream answers, 503 for an unavailable dependency and 504 for timeouts.',
    '- Group A (correct the request) is 400 for malformed or unsupported input, 403 for policy refusals,',
    '  404 for unknown resources, 405 for a wrong method, 409 for resource-state conflicts, 413 for size',
    '  caps, 415 for unsupported media, 422 for valid requests the current resource state cannot serve,',
    '  429 for count caps, 501 for features not enabled here and 5xx where the code reports a provider',
    '  or gateway failure.',
    '- Codes with a specific action: payer and budget problems are 402; holds and outcomes that need',
    '  reconciling are 409; failed settlements and broken streams are 502; unavailable settlement or',
    '  pricing is 503.',
    '- For codes without a fixed status the actual response status wins; a code may therefore occasionally',
    '  arrive with a status other than the one listed.',
    '',
    '`type` follows from the status through one mapping, the Anthropic vocabulary, which both SDK families accept:',
    '',
    ...typeTable(),
    `Retryable: every Group B code, plus ${retryableOutsideGroupB()}.`,
    'Nothing that may already have caused side effects (settlement, canary, stream codes) is marked retryable.',
    '',
    '## Dynamic provider codes',
    '',
    "Errors relayed from a provider keep the provider's own code, including numeric JSON-RPC codes. Their",
    'type follows the status as above, and they are retryable when the status is 429 or 5xx.',
    '',
  ];
}

/** The codes the gateway produces outside the catalogue (foreign-codes.ts). */
function foreignSection(): string[] {
  const header = ['Code', 'HTTP status', 'Type', 'Retryable', 'Default human message', 'Defined by', 'Action'];
  return [
    '## Codes from other APIs',
    '',
    "Codes the gateway produces itself that are another API's own, kept because that API's SDK acts on",
    'them. Type and retry advice follow the status as for the catalogue.',
    '',
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...Object.entries(foreignCodes).map(([code, entry]: [string, ForeignCodeEntry]) => {
      const type = errorTypeForStatus(entry.status);
      const retryable = entry.status === 429 || entry.status >= 500;
      return `| \`${code}\` | ${entry.status} | \`${type}\` | ${retryable ? 'yes' : 'no'} | ${[entry.message, entry.origin, entry.action].map(cell).join(' | ')} |`;
    }),
    '',
  ];
}

/** The complete markdown of docs/errors.md. */
export function renderErrorsMarkdown(): string {
  const lines = [...intro(), ...catalogueGroups.flatMap(groupSection), ...foreignSection()];
  return `${lines.join('\n').trimEnd()}\n`;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.stdout.write(renderErrorsMarkdown());
}
