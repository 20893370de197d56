import { z } from 'zod';
import { modelIdField } from '../../http/validate.js';

/** Longest speech input (docs/spec-conformance.md 8.3), in characters (Unicode code points). */
export const maxSpeechCharacters = 4096;
/** Speech speed range (docs/spec-conformance.md 8.4). */
export const speechSpeed = { min: 0.25, max: 4 } as const;

/** `POST /v1/audio/speech` body; unknown fields (e.g. `instructions`) pass through. */
export const speechRequest = z.looseObject({
  model: modelIdField,
  input: z.string().min(1),
  voice: z.string().min(1).max(100).optional(),
  response_format: z.enum(['mp3', 'wav']).optional(),
  speed: z
    .number()
    .min(speechSpeed.min, `must be from ${speechSpeed.min} to ${speechSpeed.max}`)
    .max(speechSpeed.max, `must be from ${speechSpeed.min} to ${speechSpeed.max}`)
    .optional(),
  region: z.string().min(1).optional(),
});

export type SpeechRequest = z.infer<typeof speechRequest>;
