// A provider's base URL as an administrator enters it: http(s) only, and never a link-local or
// cloud metadata address (the classic way to make a server fetch its own instance credentials)
// unless the deployment allows it. Loopback and private networks stay allowed: suppliers often
// run next to the gateway.
import { BlockList, isIP } from 'node:net';
import { ApiError } from '../errors/index.js';

const metadataHosts = new Set(['metadata.google.internal', 'metadata', 'instance-data', 'metadata.azure.com']);

/**
 * Link-local and metadata addresses in every spelling a URL may carry. Node's BlockList checks an
 * IPv4-mapped IPv6 address (`[::ffff:169.254.169.254]`, which the URL parser writes
 * `[::ffff:a9fe:a9fe]`) against the IPv4 rules; the other IPv6 forms that embed an IPv4 address
 * (IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are listed here.
 */
const refusedAddresses = new BlockList();
refusedAddresses.addSubnet('169.254.0.0', 16, 'ipv4');
refusedAddresses.addAddress('0.0.0.0', 'ipv4');
refusedAddresses.addSubnet('fe80::', 10, 'ipv6');
refusedAddresses.addAddress('::', 'ipv6');
refusedAddresses.addSubnet('fd00:ec2::', 32, 'ipv6'); // AWS's IPv6 metadata endpoint
refusedAddresses.addSubnet('::a9fe:0', 112, 'ipv6');
refusedAddresses.addSubnet('64:ff9b::a9fe:0', 112, 'ipv6');
refusedAddresses.addSubnet('2002:a9fe::', 32, 'ipv6');

function linkLocal(host: string): boolean {
  // A trailing dot names the same host (`metadata.google.internal.`).
  const bare = host
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
  if (metadataHosts.has(bare)) return true;
  const family = isIP(bare);
  return family !== 0 && refusedAddresses.check(bare, family === 4 ? 'ipv4' : 'ipv6');
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
