import { describe, expect, it } from 'vitest';
import { effectiveAutorouterPolicy, isDefaultAutorouterPolicy } from './policy.js';

describe('effectiveAutorouterPolicy', () => {
  it('is the default (cheapest, nothing preferred or excluded) when no layer says anything', () => {
    const policy = effectiveAutorouterPolicy({});
    expect(policy).toEqual({ mode: 'cheapest', prefer: [], exclude: [] });
    expect(isDefaultAutorouterPolicy(policy)).toBe(true);
  });

  it('takes mode and preferred models from the most specific layer that sets them', () => {
    const layers = {
      organisation: { mode: 'premium' as const, prefer: ['org-a'] },
      user: { mode: 'cheapest' as const },
      key: { prefer: ['key-a', 'key-b'] },
    };
    expect(effectiveAutorouterPolicy(layers)).toEqual({ mode: 'cheapest', prefer: ['key-a', 'key-b'], exclude: [] });
    expect(effectiveAutorouterPolicy({ ...layers, keyOverride: { mode: 'premium' } }).mode).toBe('premium');
    expect(effectiveAutorouterPolicy({ organisation: layers.organisation })).toEqual({ mode: 'premium', prefer: ['org-a'], exclude: [] });
  });

  it('adds exclusions up across layers and drops excluded models from the preferred list', () => {
    const policy = effectiveAutorouterPolicy({
      organisation: { exclude: ['banned'] },
      user: { exclude: ['slow'] },
      key: { prefer: ['banned', 'fast', 'fast'] },
    });
    expect(policy).toEqual({ mode: 'cheapest', prefer: ['fast'], exclude: ['banned', 'slow'] });
    expect(isDefaultAutorouterPolicy(policy)).toBe(false);
  });

  it('treats an empty preferred list as saying nothing', () => {
    expect(effectiveAutorouterPolicy({ key: { prefer: [] }, user: { prefer: ['u'] } }).prefer).toEqual(['u']);
  });
});
