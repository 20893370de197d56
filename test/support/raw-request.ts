import { connect } from 'node:net';

/**
 * Sends `request` to `baseUrl` as written — repeated headers, HTTP/1.0, framing fetch would
 * normalise — and reads the whole answer, which the server ends (send `Connection: close`). The
 * socket stays open for writing: Node's server takes a client that half-closes as gone, and
 * drops a request still in flight.
 */
export function rawRequest(baseUrl: string, request: string): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(request));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (text: string) => (answer += text));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}
