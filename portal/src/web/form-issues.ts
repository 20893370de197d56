// A form submitted from a page that the route refuses is shown again — the person's input kept,
// each problem named beside the form (views/partials/form-issues.ejs) — instead of an error page
// that loses what they typed. JSON callers still get the error body.
import type { ErrorRequestHandler, Request, Response } from 'express';
import { ApiError } from '../../../core/errors/index.js';
import { wantsJson } from './errors.js';

/** One problem of a submitted form: the field (empty when the form as a whole) and what is wrong. */
export interface FormIssue {
  name: string;
  msg: string;
}

/** What is wrong with a submitted form, field by field: a validation error's details, else its message. */
export function formIssues(error: ApiError): FormIssue[] {
  const detail = error.details?.detail as { loc: (string | number)[]; msg: string }[] | undefined;
  if (detail && detail.length > 0) return detail.map((d) => ({ name: String(d.loc[1] ?? ''), msg: d.msg }));
  return [{ name: error.param ?? '', msg: error.humanMessage }];
}

/** What a page shows of a refused form: each problem, and the values as typed. */
export interface FormPage {
  issues: FormIssue[];
  values: Record<string, unknown>;
}

/** A submitted value as a form field shows it again: text as typed, anything else (a list, an object) empty. */
export function typedValue(value: unknown): string {
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : '';
}

/** A page shown for itself, not after a refused form. */
export const emptyFormPage: FormPage = Object.freeze({ issues: [], values: {} }) as FormPage;

/**
 * Runs a form's handler; when it refuses the input (a 4xx catalogue error) and the form came from
 * a page, `show` renders that page again with the error's status, the issues and the submitted
 * values. Anything else goes on to the error handler.
 */
export async function withFormPage(
  req: Request,
  res: Response,
  handle: () => Promise<void>,
  show: (status: number, form: FormPage) => Promise<void>,
): Promise<void> {
  try {
    await handle();
  } catch (error) {
    if (!(error instanceof ApiError) || error.status >= 500 || error.status === 401 || wantsJson(req)) throw error;
    await show(error.status, { issues: formIssues(error), values: (req.body ?? {}) as Record<string, unknown> });
  }
}

/**
 * The last handler of a page with a filter form (GET): a filter the route refuses (a 4xx from its
 * query's validation or the handler) shows the page again through `show` — its default view with
 * the problem above the form and the filters as typed — instead of an error page that loses the
 * navigation and the form. JSON callers, and refusals of who is asking (401, 403), go on to the
 * error handler.
 */
export function refusedFiltersPage(
  show: (req: Request, res: Response, status: number, issues: FormIssue[]) => Promise<void>,
): ErrorRequestHandler {
  return (error: unknown, req, res, next) => {
    if (!(error instanceof ApiError) || error.status >= 500 || error.status === 401 || error.status === 403 || wantsJson(req))
      return next(error);
    show(req, res, error.status, formIssues(error)).catch(next);
  };
}
