import { describe, expect, it, onTestFinished } from 'vitest';
import pino from 'pino';
import { MemoryStore, type Store } from '../../../core/store/index.js';
import { FormClaims } from './form-claims.js';

const silent = pino({ level: 'silent' });
const token = '0f9d8c7b-6a5e-4d3c-8b2a-1f0e9d8c7b6a';

/** A store whose every command fails, as when Redis is out. */
function brokenStore(): Store {
  return new Proxy({} as Store, {
    get: () => () => Promise.reject(new Error('store unavailable')),
  });
}

describe('new-key form claims', () => {
  it('the first submission makes the key; a later one gets the key it made', async () => {
    const store = new MemoryStore();
    onTestFinished(() => store.close());
    const claims = new FormClaims(store, silent, 'key-form');
    expect(await claims.claim(7, token)).toEqual({ first: true });
    await claims.made(7, token, 42);
    expect(await claims.claim(7, token)).toEqual({ first: false, madeId: '42' });
    // Another user's token space is their own.
    expect(await claims.claim(8, token)).toEqual({ first: true });
  });

  it('a claim whose key was not made is let go of, so the form can be sent again', async () => {
    const store = new MemoryStore();
    onTestFinished(() => store.close());
    const claims = new FormClaims(store, silent, 'key-form');
    expect(await claims.claim(7, token)).toEqual({ first: true });
    await claims.release(7, token);
    expect(await claims.claim(7, token)).toEqual({ first: true });
  });

  it('with the store out, keys are still made (unchecked) and recording them does not fail the page', async () => {
    const claims = new FormClaims(brokenStore(), silent, 'key-form');
    expect(await claims.claim(7, token)).toEqual({ first: true });
    await expect(claims.made(7, token, 42)).resolves.toBeUndefined();
    await expect(claims.release(7, token)).resolves.toBeUndefined();
  });
});
