// Group D (docs/errors.md; docs/spec-conformance.md §7): the caller is known but policy (account, model, project, organisation)
// forbids the request. All 403, none retryable: access must be granted first.
import type { CatalogueEntry, CatalogueGroup } from './catalogue-types.js';

/** Group D codes, as data. */
export const groupDErrors = {
  group: 'D',
  retryable: false,
  action:
    'Check the explanation and the required account, model, project or organisation policy. Correct the configuration or request the necessary access before retrying.',
  entries: {
    account_status: { status: 403, message: 'The account is not in good standing for this request' },
    atomic_canary_forbidden: { status: 403, message: 'Canary operations are not permitted for this account' },
    client_secret_scope_mismatch: { status: 403, message: 'The client secret does not cover the scope this request needs' },
    native_org_context_required: { status: 403, message: 'The native lane requires an organisation context' },
    native_org_lane_disabled: { status: 403, message: 'The native lane is disabled for this organisation' },
    document_conversion_provider_policy_invalid: { status: 403, message: 'The document conversion provider is not allowed by policy' },
    fake_adapter_forbidden: { status: 403, message: 'The test adapter may not be used here' },
    forbidden: { status: 403, message: 'You do not have access to this resource' },
    model_not_accessible: { status: 403, message: 'The model is not accessible to your account' },
    origin_required: { status: 403, message: 'An Origin header is required for this request' },
    permission_denied: { status: 403, message: 'You lack the permission this request needs' },
    pin_forbidden: { status: 403, message: 'Pinning a lane is not permitted for this account' },
    provider_redirect_forbidden: { status: 403, message: 'Redirecting to this provider is not permitted' },
    proxy_event_ingest_disabled: { status: 403, message: 'Proxy event ingestion is disabled' },
    realtime_transport_required: { status: 403, message: 'This model may only be used through a realtime transport' },
    replacement_required: { status: 403, message: 'This resource has been superseded; use its replacement' },
    requester_bridge_disabled: { status: 403, message: 'The requester bridge is disabled for this account' },
    streaming_settlement_required: { status: 403, message: 'Policy requires streaming settlement for this request' },
    webchat_key_scope: { status: 403, message: 'The web chat key is not scoped for this request' },
  },
} as const satisfies CatalogueGroup<Readonly<Record<string, CatalogueEntry>>>;
