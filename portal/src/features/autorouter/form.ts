// The body every autorouter update takes (docs/autorouter.md): a mode, preferred models and
// excluded models — as form fields (comma- or line-separated lists) or JSON (arrays) — or
// `action=clear` to remove the layer. Model ids are checked against the catalogue.
import { z } from 'zod';
import { autorouterModes, type AutorouterLayer } from '../../../../core/autorouter/index.js';
import type { Catalogue } from '../../../../core/config/index.js';
import { ApiError } from '../../../../core/errors/index.js';

/** Most models one list may name. */
const maxListed = 20;

const modelList = z.union(
  [
    z.array(z.string().trim().min(1).max(200)).max(maxListed, `name at most ${maxListed} models`),
    z
      .string()
      .max(4000)
      .transform((text) =>
        text
          .split(/[\s,]+/)
          .map((m) => m.trim())
          .filter(Boolean),
      )
      .refine((list) => list.length <= maxListed, `name at most ${maxListed} models`),
  ],
  { message: 'must be a list of model ids (an array, or text separated by commas)' },
);

/** One layer's update. */
export const layerBody = z.strictObject({
  action: z.enum(['save', 'clear'], { message: 'must be save or clear' }).optional(),
  mode: z
    .union([z.enum(autorouterModes), z.literal(''), z.null()], { message: `must be ${autorouterModes.join(' or ')}, or empty to inherit` })
    .optional(),
  prefer: modelList.optional(),
  exclude: modelList.optional(),
});

/** The layer an update asks for; null clears it. Unknown models are refused naming the field. */
export function toLayer(catalogue: Catalogue, body: z.infer<typeof layerBody>): AutorouterLayer | null {
  if (body.action === 'clear') return null;
  for (const field of ['prefer', 'exclude'] as const) {
    const unknown = (body[field] ?? []).filter((m) => !catalogue.routes.has(m));
    if (unknown.length > 0)
      throw new ApiError('validation_error', {
        status: 422,
        param: field,
        humanMessage: `Not models of this platform: ${unknown.slice(0, 5).join(', ')} (see /dashboard/models)`,
      });
  }
  // Within one layer, a model both preferred and excluded is a contradiction to point out: saved,
  // the exclusion would silently win (policy.ts), and the page would show a preference that does nothing.
  const both = (body.prefer ?? []).filter((m) => (body.exclude ?? []).includes(m));
  if (both.length > 0)
    throw new ApiError('validation_error', {
      status: 422,
      param: 'exclude',
      humanMessage: `Both preferred and excluded: ${[...new Set(both)].slice(0, 5).join(', ')}; keep each model in one list`,
    });
  return {
    mode: body.mode || null,
    prefer: [...new Set(body.prefer ?? [])],
    exclude: [...new Set(body.exclude ?? [])],
  };
}
