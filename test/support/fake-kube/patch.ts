import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { KubeStatusError } from './kube-status.js';
import type { KubeObject } from './object-store.js';

/** RFC 7386 JSON merge patch: objects merge recursively, null deletes, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return structuredClone(patch);
  const base: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    if (value === null) delete base[key];
    else base[key] = mergePatch(base[key], value);
  }
  return base;
}

/**
 * Applies a PATCH body by its content type. Strategic merge is served as a JSON merge patch:
 * the project's kinds declare no merge keys, so lists are replaced either way. Server-side
 * apply is not implemented (415, as a server without the feature would answer).
 */
export function applyPatch(current: KubeObject, contentType: string, body: unknown): KubeObject {
  const mediaType = contentType.split(';')[0]!.trim().toLowerCase();
  switch (mediaType) {
    case 'application/merge-patch+json':
    case 'application/strategic-merge-patch+json':
      return mergePatch(current, body) as KubeObject;
    case 'application/json-patch+json': {
      if (!Array.isArray(body)) throw new KubeStatusError(400, 'BadRequest', 'json patch must be an array of operations');
      try {
        return fastJsonPatch.applyPatch(structuredClone(current), body as Operation[], true, false).newDocument;
      } catch (error) {
        // A failed `test` operation or a bad path is 422, the real server's answer.
        throw new KubeStatusError(422, 'Invalid', `the json patch could not be applied: ${(error as Error).message.split('\n')[0]}`);
      }
    }
    default:
      throw new KubeStatusError(
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json (got ${mediaType})`,
      );
  }
}
