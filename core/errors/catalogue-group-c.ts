// Group C (docs/errors.md; docs/spec-conformance.md §7): a credential or session is missing, wrong or expired. All 401, none
// retryable: sending the same rejected credentials again cannot succeed.
import type { CatalogueEntry, CatalogueGroup } from './catalogue-types.js';

/** Group C codes, as data. */
export const groupCErrors = {
  group: 'C',
  retryable: false,
  action:
    'Check the named authentication or credential condition. Sign in again or have the administrator correct it; do not loop retries with the same rejected credentials.',
  entries: {
    auth_context_denied: { status: 401, message: 'The sign-in context does not permit this request' },
    auth_issue: { status: 401, message: 'There is a problem with the credentials for this request' },
    authentication: { status: 401, message: 'The credentials could not be verified' },
    authentication_required: { status: 401, message: 'Sign-in is required for this request' },
    claim_expired: { status: 401, message: 'The claim presented has expired' },
    native_token_error: { status: 401, message: 'The token for the native lane could not be verified' },
    expired_api_key: { status: 401, message: 'The API key has expired' },
    expired_client_secret: { status: 401, message: 'The client secret has expired' },
    free_token_grant_create_failed: { status: 401, message: 'The free token grant could not be created for these credentials' },
    free_token_grant_update_failed: { status: 401, message: 'The free token grant could not be updated for these credentials' },
    invalid_api_key: { status: 401, message: 'The API key is not valid' },
    invalid_credentials: { status: 401, message: 'The email address or password is incorrect' },
    invalid_session: { status: 401, message: 'The session is not valid; sign in again' },
    invalid_token: { status: 401, message: 'The token is not valid' },
    lease_expired_or_unknown: { status: 401, message: 'The lease has expired or was never issued' },
    missing_api_key: { status: 401, message: 'No API key was provided' },
    missing_session_key: { status: 401, message: 'No session key was provided' },
    model_ext_code_unauthorized: { status: 401, message: 'The credentials do not allow the code extension for this model' },
    session_collision: { status: 401, message: 'The session is already in use elsewhere; sign in again' },
    session_limit: { status: 401, message: 'The maximum number of active sessions has been reached; sign in again' },
    session_too_large: { status: 401, message: 'The session data grew too large; sign in again' },
    unauthenticated: { status: 401, message: 'The request carries no valid credentials' },
    unauthorized: { status: 401, message: 'The credentials were rejected' },
  },
} as const satisfies CatalogueGroup<Readonly<Record<string, CatalogueEntry>>>;
