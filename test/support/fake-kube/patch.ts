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
 * the project's kinds declare no merge keys, so lists are replaced either way. Server-side apply
 * is approximated for a single field manager: the applied configuration is merged over the
 * object, its lists replacing whole (no managedFields are kept, so fields another manager set
 * survive only where the configuration does not name them, as with a forced apply).
 */
export function applyPatch(current: KubeObject, contentType: string, body: unknown): KubeObject {
  const mediaType = mediaTypeOf(contentType);
  switch (mediaType) {
    case 'application/merge-patch+json':
    case 'application/strategic-merge-patch+json':
      return mergePatch(current, body) as KubeObject;
    case 'application/apply-patch+yaml':
      return applyConfiguration(current, body);
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
        `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got ${mediaType})`,
      );
  }
}

/** True for a server-side apply request (which creates the object when it is absent). */
export function isApply(contentType: string): boolean {
  return mediaTypeOf(contentType) === 'application/apply-patch+yaml';
}

function mediaTypeOf(contentType: string): string {
  return contentType.split(';')[0]!.trim().toLowerCase();
}

/** The applied configuration over the current object (body as JSON, which is valid YAML; clients send JSON). */
function applyConfiguration(current: KubeObject, body: unknown): KubeObject {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new KubeStatusError(400, 'BadRequest', 'an apply configuration must be an object');
  // A resourceVersion in the configuration is a precondition (the store answers 409 when stale).
  return mergePatch(current, body) as KubeObject;
}
