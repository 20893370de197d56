// Drift tests between the gateway API's error catalogue (docs/spec-conformance.md part 7) and
// core/errors. spec-codes.json is the repository's copy of the specification's code lists, so the
// tests run on the repository alone. Whoever holds the specification text can also check that copy
// (and the action texts) against it: SVC_SPEC_FILE=/path/to/gateway-api-spec.txt npm test -- core/errors
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { describe, it } from 'vitest';
import { z } from 'zod';
import {
  catalogueGroups,
  errorCatalogue,
  errorDefinition,
  errorTypeForStatus,
  isErrorCode,
  type ErrorCode,
  type ErrorGroup,
} from './catalogue.js';
import type { CatalogueEntry } from './catalogue-types.js';

const specCodesSchema = z
  .object({
    special: z.array(z.string()),
    A: z.array(z.string()),
    B: z.array(z.string()),
    C: z.array(z.string()),
    D: z.array(z.string()),
  })
  .strict();
type SpecCodes = z.infer<typeof specCodesSchema>;
const groups: readonly ErrorGroup[] = ['special', 'A', 'B', 'C', 'D'];

const fixture = specCodesSchema.parse(JSON.parse(readFileSync(new URL('./spec-codes.json', import.meta.url), 'utf8')));
const specPath = process.env.SVC_SPEC_FILE ?? '';
const specMissing = specPath !== '' && existsSync(specPath) ? false : 'SVC_SPEC_FILE not set to the specification text';

function specPart7(): string {
  const text = readFileSync(specPath, 'utf8');
  const start = text.indexOf('## 7. Errors');
  const end = text.indexOf('## 8.', start);
  assert.ok(start >= 0 && end > start, 'spec part 7 not found');
  return text.slice(start, end);
}

/** Special-table rows as code → action; one row may list several codes. */
function parseSpecialTable(part7: string): Map<string, string> {
  const table = part7.slice(part7.indexOf('### Codes with a specific action'), part7.indexOf('### Codes by suggested action'));
  const rows = new Map<string, string>();
  for (const line of table.split('\n')) {
    const match = /^\| ([a-z_, ]+) \| (.+) \|$/.exec(line);
    if (!match || match[1] === undefined || match[2] === undefined || match[1].trim() === 'Code') continue;
    for (const code of match[1].split(',')) rows.set(code.trim(), match[2].trim());
  }
  return rows;
}

function parseSpecCodes(part7: string): SpecCodes {
  const lists: Record<string, string[]> = { special: [...parseSpecialTable(part7).keys()] };
  const lines = part7.split('\n');
  lines.forEach((line, index) => {
    const letter = /^\*\*Group ([A-D])\./.exec(line)?.[1];
    const list = lines[index + 1];
    if (letter !== undefined && list !== undefined) lists[letter] = list.trim().replace(/\.$/, '').split(', ');
  });
  return specCodesSchema.parse(lists);
}

describe('spec code fixture', () => {
  it('matches the specification text, when SVC_SPEC_FILE names it', { skip: Boolean(specMissing) }, () => {
    assert.deepEqual(fixture, parseSpecCodes(specPart7()));
  });

  it('lists every code once', () => {
    const all = groups.flatMap((group) => fixture[group]);
    assert.ok(all.length > 250, `only ${all.length} codes in the fixture`);
    assert.equal(new Set(all).size, all.length);
  });
});

describe('error catalogue', () => {
  it('holds every spec code in its spec group', () => {
    for (const group of groups) {
      for (const code of fixture[group]) {
        assert.ok(isErrorCode(code), `${code} missing from the catalogue`);
        assert.equal(errorDefinition(code).group, group, `${code} is in the wrong group`);
      }
    }
  });

  it('holds no code beyond the spec', () => {
    const specCodes = new Set(groups.flatMap((group) => fixture[group]));
    const extra = Object.keys(errorCatalogue).filter((code) => !specCodes.has(code));
    assert.deepEqual(extra, []);
  });

  it('puts no code in two groups', () => {
    const seen = new Map<string, ErrorGroup>();
    for (const group of catalogueGroups) {
      for (const code of Object.keys(group.entries)) {
        assert.equal(seen.get(code), undefined, `${code} is in groups ${seen.get(code)} and ${group.group}`);
        seen.set(code, group.group);
      }
    }
  });

  it('gives every code a valid status, a type from that status and a message without the code', () => {
    for (const group of catalogueGroups) {
      const entries: Readonly<Record<string, CatalogueEntry>> = group.entries;
      for (const [code, entry] of Object.entries(entries)) {
        const definition = errorDefinition(code as ErrorCode);
        assert.equal(definition.code, code);
        assert.ok(Number.isInteger(definition.status) && definition.status >= 400 && definition.status <= 599, code);
        assert.equal(definition.type, entry.type ?? errorTypeForStatus(definition.status), code);
        assert.ok(definition.message.trim().length > 0, `${code} has no message`);
        assert.ok(!definition.message.toLowerCase().includes(code), `${code} message repeats the code`);
        // One style across the catalogue: no trailing period, since the message is embedded in `<code> - <message>`.
        assert.ok(!definition.message.endsWith('.'), `${code} message ends with a period`);
        assert.ok(definition.action.trim().length > 0, `${code} has no action`);
      }
    }
  });

  it('uses the fixed statuses: C 401, D 403, billing_limit_reached 403', () => {
    for (const code of fixture.C) assert.equal(errorCatalogue[code as ErrorCode].status, 401, code);
    for (const code of fixture.D) assert.equal(errorCatalogue[code as ErrorCode].status, 403, code);
    assert.equal(errorCatalogue.billing_limit_reached.status, 403);
    assert.equal(errorCatalogue.billing_limit_reached.type, 'permission_error');
  });

  it('marks group B retryable and side-effect codes not retryable', () => {
    for (const code of fixture.B) assert.equal(errorCatalogue[code as ErrorCode].retryable, true, code);
    for (const code of fixture.C.concat(fixture.D)) assert.equal(errorCatalogue[code as ErrorCode].retryable, false, code);
    for (const code of ['edge_error', 'identity_execution_capacity', 'retryable', 'pod_draining'] as const) {
      assert.equal(errorCatalogue[code].retryable, true, code);
    }
    const mustNotRepeat = fixture.special.filter((code) => /settlement|canary|stream_|recovery/.test(code));
    assert.ok(mustNotRepeat.length >= 9);
    for (const code of mustNotRepeat) assert.equal(errorCatalogue[code as ErrorCode].retryable, false, code);
  });

  it("carries the specification's action text of each special code, and the group text otherwise", { skip: Boolean(specMissing) }, () => {
    const part7 = specPart7();
    const special = parseSpecialTable(part7);
    for (const [code, action] of special) {
      const definition = errorCatalogue[code as ErrorCode];
      // The spec defers this one to stream_error; the catalogue spells that action out.
      if (code === 'stream_interrupted') assert.ok(definition.action.startsWith('The stream stopped early.'));
      else assert.equal(definition.action, action, code);
    }
    for (const group of ['A', 'B', 'C', 'D'] as const) {
      const heading = part7.split('\n').find((line) => line.startsWith(`**Group ${group}. `));
      const action = heading?.replace(`**Group ${group}. `, '').replace(/:\*\*$/, '.');
      for (const code of fixture[group]) assert.equal(errorCatalogue[code as ErrorCode].action, action, code);
    }
  });

  it('recognises only own catalogue codes', () => {
    assert.equal(isErrorCode('rate_limit_exceeded'), true);
    for (const notCode of ['', 'toString', 'constructor', '__proto__', 'RATE_LIMIT_EXCEEDED', 'rate_limit']) {
      assert.equal(isErrorCode(notCode), false, notCode);
    }
  });

  it('maps statuses to the Anthropic type vocabulary', () => {
    const expected: ReadonlyArray<readonly [number, string]> = [
      [400, 'invalid_request_error'],
      [401, 'authentication_error'],
      [402, 'billing_error'],
      [403, 'permission_error'],
      [404, 'not_found_error'],
      [405, 'invalid_request_error'],
      [409, 'invalid_request_error'],
      [408, 'timeout_error'],
      [413, 'request_too_large'],
      [414, 'request_too_large'],
      [415, 'invalid_request_error'],
      [422, 'invalid_request_error'],
      [429, 'rate_limit_error'],
      [431, 'request_too_large'],
      [500, 'api_error'],
      [501, 'api_error'],
      [502, 'api_error'],
      [503, 'overloaded_error'],
      [504, 'timeout_error'],
      [529, 'overloaded_error'],
    ];
    for (const [status, type] of expected) assert.equal(errorTypeForStatus(status), type, String(status));
  });
});
