import { describe, expect, it } from 'vitest';
import { buildCatalogue } from '../../../../core/config/index.js';
import { formatPrice, publicModels } from './catalogue-view.js';

describe('publicModels', () => {
  it('prices each model by its first-ranked supplier and lists every region serving it', () => {
    const catalogue = buildCatalogue(
      {
        suppliers: [
          {
            name: 'us',
            protocol: 'openai',
            base_url: 'http://127.0.0.1:1/v1',
            region: 'US',
            priority: 2,
            models: [{ id: 'm', input_usd_per_mtok: 9, output_usd_per_mtok: 9 }],
          },
          {
            name: 'eu',
            protocol: 'openai',
            base_url: 'http://127.0.0.1:1/v1',
            region: 'EU',
            priority: 1,
            models: [
              { id: 'm', input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 },
              { id: 'tts', usd_per_mchar: 15, capabilities: ['speech'] },
            ],
          },
        ],
      },
      {},
    );
    const models = publicModels(catalogue);
    expect(models.map((m) => m.id)).toEqual(['m', 'tts']);
    expect(models[0]).toMatchObject({ regions: ['EU', 'US'], prices: ['$0.15 / 1M input tokens', '$0.60 / 1M output tokens'] });
    expect(models[1]).toMatchObject({ capabilities: ['speech'], prices: ['$15.00 / 1M characters'] });
  });

  it('never rounds a small price to zero', () => {
    expect(formatPrice(0.006)).toBe('$0.006');
    expect(formatPrice(0.02)).toBe('$0.02');
    expect(formatPrice(2.5)).toBe('$2.50');
  });
});
