// Layout data only (conventions: res.locals carries what the layout needs, nothing more):
// the current path for the navigation, the language, and the signed-in user's summary.
import type { NextFunction, Request, Response } from 'express';

/** Languages a user may pick; the choice is kept in the svc_lang cookie and the profile. */
export const languages = [
  { code: 'en', label: 'English' },
  { code: 'de', label: 'Deutsch' },
  { code: 'fr', label: 'Français' },
  { code: 'es', label: 'Español' },
] as const;

/** A language code the portal knows. */
export type Language = (typeof languages)[number]['code'];

/** Whether `value` is a known language code. */
export function isLanguage(value: unknown): value is Language {
  return languages.some((l) => l.code === value);
}

/** The cookie holding the language preference. */
export const languageCookie = 'svc_lang';

/** How the language cookie is set: readable by the page's script, a year long, the whole site. */
export const languageCookieOptions = { httpOnly: false, sameSite: 'lax', maxAge: 365 * 24 * 3_600_000, path: '/' } as const;

/** Reads a cookie from the Cookie header (express has no cookie parser built in). */
export function readCookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** Sets res.locals.layout for every view; the user is filled in later by the principal loader. */
export function layoutLocals(req: Request, res: Response, next: NextFunction): void {
  const fromCookie = readCookie(req, languageCookie);
  res.locals.layout = { path: req.path, language: isLanguage(fromCookie) ? fromCookie : 'en', languages, user: undefined };
  next();
}
