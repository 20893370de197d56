// The floor for any Node gateway: a ~30-line reverse proxy (node:http + undici) that forwards
// every request to UPSTREAM unchanged. Benchmarked next to our gateway to show what our work
// (auth, validation, routing, accounting) costs on top of plain proxying.
import { createServer } from 'node:http';
import { Pool } from 'undici';

const upstream = new URL(process.env.UPSTREAM ?? 'http://127.0.0.1:8090');
const pool = new Pool(upstream.origin, { connections: 256, keepAliveTimeout: 30_000 });

const server = createServer(async (req, res) => {
  try {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const { statusCode, headers, body } = await pool.request({
      path: req.url,
      method: req.method,
      headers: { 'content-type': req.headers['content-type'] ?? 'application/json', authorization: req.headers.authorization ?? '' },
      body: chunks.length ? Buffer.concat(chunks) : undefined,
    });
    res.writeHead(statusCode, { 'content-type': headers['content-type'] ?? 'application/json' });
    for await (const chunk of body) res.write(chunk);
    res.end();
  } catch (error) {
    res.writeHead(502).end(String(error));
  }
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 8095), '127.0.0.1', () => console.log(`bare proxy listening on ${process.env.PORT ?? 8095}`));
process.on('SIGTERM', () => server.close(() => pool.close().then(() => process.exit(0))));
