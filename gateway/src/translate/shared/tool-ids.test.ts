import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { parseToolArguments } from './safe-json.js';
import { sanitizeToolId } from './tool-ids.js';

describe('sanitizeToolId', () => {
  it('keeps valid ids and replaces every other character with _', () => {
    assert.equal(sanitizeToolId('toolu_01AbC-x'), 'toolu_01AbC-x');
    assert.match(sanitizeToolId('call.1:ab/c d'), /^call_1_ab_c_d_[A-Za-z0-9_-]{8}$/);
    assert.match(sanitizeToolId('функция'), /^[a-zA-Z0-9_-]+$/);
  });

  it('keeps ids apart that differ only in replaced characters (c.1, c:1), so each result still finds its call', () => {
    assert.notEqual(sanitizeToolId('c.1'), sanitizeToolId('c:1'));
    assert.notEqual(sanitizeToolId('c.1'), 'c_1');
    assert.match(sanitizeToolId(''), /^_[A-Za-z0-9_-]{8}$/);
  });

  it('is deterministic and idempotent, so ids and their results still match', () => {
    const id = 'functions.get_weather:0';
    assert.equal(sanitizeToolId(id), sanitizeToolId(id));
    assert.equal(sanitizeToolId(sanitizeToolId(id)), sanitizeToolId(id));
  });
});

describe('parseToolArguments', () => {
  it('parses a JSON object', () => {
    assert.deepEqual(parseToolArguments('{"city":"Paris","days":[1,2]}'), { city: 'Paris', days: [1, 2] });
  });

  it('gives {} for invalid JSON, empty text and non-object values', () => {
    assert.deepEqual(parseToolArguments('{"city": "Par'), {});
    assert.deepEqual(parseToolArguments(''), {});
    assert.deepEqual(parseToolArguments('[1,2]'), {});
    assert.deepEqual(parseToolArguments('"text"'), {});
    assert.deepEqual(parseToolArguments('null'), {});
  });
});
