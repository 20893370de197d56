// A provider's base URL as an administrator enters it: http(s) only, and never a link-local or
// cloud metadata address (the classic way to make a server fetch its own instance credentials)
// unless the deployment allows it. Loopback and private networks stay allowed: suppliers often
// run next to the gateway.
import { isIP } from 'node:net';
import { ApiError } from '../errors/index.js';

const metadataHosts = new Set(['metadata.google.internal', 'metadata', 'instance-data', 'metadata.azure.com']);

function linkLocal(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (metadataHosts.has(bare)) return true;
  if (isIP(bare) === 4) return bare.startsWith('169.254.') || bare === '0.0.0.0';
  if (isIP(bare) === 6) return /^fe[89ab]/.test(bare) || bare === '::' || bare.startsWith('fd00:ec2:') || bare.includes('169.254.');
  return false;
}

/** Throws a 422 naming `base_url` unless the URL may be a supplier's. */
export function checkSupplierUrl(url: string, allowLinkLocal: boolean): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ApiError('validation_error', { status: 422, param: 'base_url', humanMessage: 'The base URL is not a URL' });
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    throw new ApiError('validation_error', { status: 422, param: 'base_url', humanMessage: 'The base URL must use http or https' });
  if (parsed.username || parsed.password)
    throw new ApiError('validation_error', {
      status: 422,
      param: 'base_url',
      humanMessage: 'Put credentials in the API key, not in the URL',
    });
  if (!allowLinkLocal && linkLocal(parsed.hostname))
    throw new ApiError('validation_error', {
      status: 422,
      param: 'base_url',
      humanMessage: 'Link-local and cloud metadata addresses cannot be suppliers (SVC_ALLOW_LINK_LOCAL_SUPPLIERS allows them)',
    });
}
