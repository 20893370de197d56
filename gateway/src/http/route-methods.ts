import type { FastifyInstance } from 'fastify';

/** One registered path pattern and the methods it answers. */
interface PathMethods {
  pattern: RegExp;
  methods: Set<string>;
}

/** A route URL (`/v1/manage/keys/:id`) as an anchored expression over concrete paths. */
function patternOf(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment === '*' ? '.*' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}$`);
}

/**
 * The methods each registered path answers, learned from the app's routes as they are added
 * (so it must be created before any route is registered). It lets the not-found handler tell
 * a path that exists but not with this method (405 `method_not_allowed` with `Allow`) from a
 * path that does not exist at all (404 `not_found`).
 */
export class RouteMethods {
  private readonly paths = new Map<string, PathMethods>();

  constructor(app: FastifyInstance) {
    app.addHook('onRoute', (route) => {
      const entry = this.paths.get(route.url) ?? { pattern: patternOf(route.url), methods: new Set<string>() };
      for (const method of [route.method].flat()) entry.methods.add(method.toUpperCase());
      this.paths.set(route.url, entry);
    });
  }

  /** The methods a concrete path answers, sorted; empty when no route has this path. */
  allowed(path: string): string[] {
    const methods = new Set<string>();
    for (const entry of this.paths.values()) {
      if (entry.pattern.test(path)) for (const method of entry.methods) methods.add(method);
    }
    return [...methods].sort();
  }
}
