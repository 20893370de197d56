import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Writes the catalogue every request-rate benchmark uses — one OpenAI-protocol supplier `sim` in
 * EU serving `gpt-4o-mini` from the simulator on `simPort` — into `dir`; returns its path.
 */
export function writeSimCatalogue(dir: string, simPort: number): string {
  const path = join(dir, 'catalog.yaml');
  writeFileSync(
    path,
    `suppliers:\n  - name: sim\n    protocol: openai\n    base_url: http://127.0.0.1:${simPort}/v1\n    region: EU\n    models:\n      - id: gpt-4o-mini\n        input_usd_per_mtok: 0.15\n        output_usd_per_mtok: 0.6\n`,
  );
  return path;
}
