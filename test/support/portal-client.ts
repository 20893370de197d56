// A tiny cookie-keeping HTTP client for portal tests: sends the portal's Origin on state changes
// (as a browser would), keeps cookies between requests, never follows redirects.

/** One browser-like visitor of the portal. */
export class PortalClient {
  readonly cookies = new Map<string, string>();

  constructor(
    readonly url: string,
    readonly origin: string = url,
  ) {}

  /** The Cookie header the client would send. */
  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async request(
    method: string,
    path: string,
    options: { json?: unknown; form?: Record<string, string>; headers?: Record<string, string>; jsonText?: string } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = { ...(method === 'GET' ? {} : { origin: this.origin }), ...options.headers };
    if (this.cookies.size > 0) headers.cookie = this.cookieHeader();
    let body: string | undefined;
    if (options.jsonText !== undefined) {
      // JSON as these exact characters (a body too deep for JSON.stringify, say).
      headers['content-type'] = 'application/json';
      headers.accept ??= 'application/json';
      body = options.jsonText;
    } else if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      headers.accept ??= 'application/json';
      body = JSON.stringify(options.json);
    } else if (options.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(options.form).toString();
    }
    const response = await fetch(`${this.url}${path}`, { method, headers, body, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return response;
  }

  get(path: string, headers?: Record<string, string>): Promise<Response> {
    return this.request('GET', path, { headers });
  }

  postJson(path: string, json: unknown, headers?: Record<string, string>): Promise<Response> {
    return this.request('POST', path, { json, headers });
  }

  postForm(path: string, form: Record<string, string>, headers?: Record<string, string>): Promise<Response> {
    return this.request('POST', path, { form, headers });
  }
}
