import { Observable, type ConfigurationOptions, type KubeConfig, type RequestContext, type ResponseContext } from '@kubernetes/client-node';

/**
 * Options for a generated API call that abort its HTTP request when `signal` does (the client
 * has no per-call timeout of its own; a request on a connection that forwards nothing would
 * otherwise wait forever).
 */
export function abortableRequest(signal: AbortSignal): ConfigurationOptions {
  const middleware = {
    pre: (context: RequestContext) => {
      context.setSignal(signal);
      return new Observable(Promise.resolve(context));
    },
    post: (response: ResponseContext) => new Observable(Promise.resolve(response)),
  };
  return { middleware: [middleware], middlewareMergeStrategy: 'append' };
}

/**
 * Runs `work` with a signal that aborts after `ms` or when `controller` is aborted, and settles
 * at that moment even if the work has not: whatever it answers later is ignored.
 */
export async function runWithin<T>(ms: number, controller: AbortController, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const { signal } = controller;
  const timer = setTimeout(() => controller.abort(new Error(`no answer within ${ms} ms`)), Math.max(0, ms));
  try {
    if (signal.aborted) throw signal.reason;
    const cutOff = new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
    cutOff.catch(() => undefined); // settling after the work did is of no interest
    const running = work(signal);
    running.catch(() => undefined); // nor is a late failure
    return await Promise.race([running, cutOff]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The same cluster and credentials, but every API client made from it aborts each request after
 * `timeoutMs` (watches are not affected: they are opened another way and end by timeoutSeconds).
 * Without it a request on a black-holed connection never ends: its reconcile holds its object
 * forever, and a replica that stepped down can neither stop nor start a new term, both of which
 * wait for the reconciles of the last one.
 */
export function withRequestTimeout(kubeConfig: KubeConfig, timeoutMs: number): KubeConfig {
  const bounded = Object.create(kubeConfig) as KubeConfig;
  bounded.applySecurityAuthentication = async (context: RequestContext) => {
    await kubeConfig.applySecurityAuthentication(context);
    context.setSignal(AbortSignal.timeout(timeoutMs));
  };
  return bounded;
}
