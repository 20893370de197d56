// The portal's last handler: a path no route answered. When some route has this path, only not
// with this method (`PUT /dashboard/keys/new`, `TRACE /`), the answer is 405 `method_not_allowed`
// with the methods it does answer in `Allow` (RFC 9110 §15.5.6), as docs/errors.md promises;
// otherwise 404 `not_found`. Both go to the error reporter, so browsers get the error page and
// JSON callers the catalogue body.
import type { Express, NextFunction, Request, Response } from 'express';
import { ApiError } from '../../../core/errors/index.js';

/** What the portal reads of Express's router layers (router@2: `match` is pure, it changes no state). */
interface RouterLayer {
  match(path: string): false | { path: string };
  route?: { methods: Record<string, boolean>; _methods(): string[] };
  handle?: { stack?: RouterLayer[] };
}

/**
 * The methods some route of `stack` answers at `path` (GET brings HEAD), descending into mounted
 * routers; `'*'` when a route takes every method. Empty when no route has this path.
 */
export function allowedMethods(stack: RouterLayer[], path: string): Set<string> {
  const methods = new Set<string>();
  const visit = (layers: RouterLayer[], rest: string) => {
    for (const layer of layers) {
      let matched: false | { path: string };
      try {
        matched = layer.match(rest);
      } catch {
        continue; // a parameter that does not decode: not this route's path
      }
      if (!matched) continue;
      if (layer.route) {
        if (layer.route.methods._all) methods.add('*');
        for (const method of layer.route._methods()) methods.add(method);
      } else if (layer.handle?.stack) {
        visit(layer.handle.stack, rest.slice(matched.path.length) || '/');
      }
    }
  };
  visit(stack, path);
  return methods;
}

/** The handler after every route: 405 with `Allow` for a known path asked with another method, else 404. */
export function methodNotAllowedOrNotFound(app: Express) {
  const stack = () => (app as unknown as { router: { stack: RouterLayer[] } }).router.stack;
  return (req: Request, res: Response, next: NextFunction): void => {
    const methods = allowedMethods(stack(), req.path);
    const method = req.method.toUpperCase();
    // A route that takes this method passed the request on (or takes every method): nothing here.
    if (methods.size === 0 || methods.has('*') || methods.has(method)) {
      next(new ApiError('not_found', { humanMessage: 'There is no page at this address' }));
      return;
    }
    const allowed = [...methods].sort();
    res.set('allow', allowed.join(', '));
    next(
      new ApiError('method_not_allowed', {
        humanMessage: `${req.path} does not answer ${method}; it answers ${allowed.join(', ')}`,
      }),
    );
  };
}
