import { describe, expect, it } from 'vitest';
import { ApiError } from '../errors/index.js';
import { checkSupplierUrl } from './supplier-url.js';

const refusal = (url: string, allowLinkLocal = false) => {
  try {
    checkSupplierUrl(url, allowLinkLocal);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return (error as ApiError).param;
  }
};

describe('checkSupplierUrl', () => {
  it('refuses the metadata address in every spelling a URL can carry', () => {
    for (const url of [
      'http://169.254.169.254/latest',
      'http://169.254.1.1/',
      'http://0xa9fea9fe/',
      'http://2852039166/',
      'http://0251.0376.0251.0376/',
      'http://[::ffff:169.254.169.254]/',
      'http://[0:0:0:0:0:ffff:a9fe:a9fe]/',
      'http://[::169.254.169.254]/',
      'http://[64:ff9b::169.254.169.254]/',
      'http://[2002:a9fe:a9fe::1]/',
      'http://[fe80::1]/',
      'http://[FE80::abcd]/',
      'http://[fd00:ec2::254]/',
      'http://[::]/',
      'http://0.0.0.0/',
      'http://metadata.google.internal/',
      'https://METADATA.GOOGLE.INTERNAL./',
    ])
      expect(refusal(url), url).toBe('base_url');
  });

  it('allows public, private and loopback suppliers, and link-local ones when the deployment says so', () => {
    for (const url of [
      'https://api.openai.com/v1',
      'http://127.0.0.1:8090/v1',
      'http://10.0.0.5/',
      'http://[::1]:8080/',
      'http://[::ffff:10.0.0.5]/',
      'http://supplier.internal:9000',
    ])
      expect(refusal(url), url).toBeUndefined();
    expect(refusal('http://169.254.169.254/', true)).toBeUndefined();
  });

  it('refuses what is not an http(s) URL, and credentials in the URL', () => {
    for (const url of ['ftp://example.com', 'not a url', 'file:///etc/passwd', 'https://user:pw@example.com/'])
      expect(refusal(url), url).toBe('base_url');
  });
});
