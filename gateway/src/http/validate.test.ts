import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApiError } from '../../../core/errors/index.js';
import { validateBody } from './validate.js';

const schema = z.strictObject({
  model: z.string(),
  input: z.union([z.string(), z.array(z.string())]),
  options: z.strictObject({ depth: z.number().int() }).optional(),
});

function failure(body: unknown): ApiError {
  try {
    validateBody(schema, body);
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected a validation error');
}

describe('validateBody: a field of several shapes says which rule its value broke', () => {
  const shapes = z.strictObject({
    stop: z.union([z.string(), z.array(z.string()).max(4)]).optional(),
    content: z.union([z.string(), z.array(z.strictObject({ type: z.literal('text'), text: z.string() }))]).optional(),
  });
  const refusal = (body: unknown) => {
    try {
      validateBody(shapes, body);
    } catch (error) {
      if (error instanceof ApiError) return { param: error.param, message: error.humanMessage };
    }
    throw new Error('expected a validation error');
  };
  // It said only "Invalid input" (outside probe).
  it('a value of none of the types names the types it could have', () => {
    expect(refusal({ content: 5 })).toEqual({ param: 'content', message: 'Invalid value for "content": expected string or array' });
  });
  it('a value of the right type names the rule it broke, where', () => {
    expect(refusal({ stop: ['a', 'b', 'c', 'd', 'e'] }).message).toMatch(
      /^Invalid value for "stop": Too big: expected array to have <=4 items/,
    );
    expect(refusal({ content: [{ type: 'text', text: 5 }] })).toEqual({
      param: 'content[0].text',
      message: 'Invalid value for "content[0].text": Invalid input: expected string, received number',
    });
  });
});

describe('validateBody: one rule for every interface', () => {
  it('a missing union-typed field is missing_fields naming it, like any other missing field', () => {
    const error = failure({ model: 'm' });
    expect(error.code).toBe('missing_fields');
    expect(error.param).toBe('input');
  });

  it('a missing model is missing_model', () => {
    expect(failure({ input: 'x' }).code).toBe('missing_model');
  });

  it('an unknown field is named, at the top level and nested', () => {
    const top = failure({ model: 'm', input: 'x', colour: 'red' });
    expect(top.code).toBe('validation_error');
    expect(top.param).toBe('colour');
    expect(top.humanMessage).toContain('"colour"');
    const nested = failure({ model: 'm', input: 'x', options: { depth: 1, width: 2 } });
    expect(nested.param).toBe('options.width');
  });

  it('a present field of the wrong type is validation_error naming it', () => {
    const error = failure({ model: 'm', input: 42 });
    expect(error.code).toBe('validation_error');
    expect(error.param).toBe('input');
  });
});
