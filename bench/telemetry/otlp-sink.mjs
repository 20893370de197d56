// A stand-in OpenTelemetry collector for the telemetry benchmark: accepts OTLP/HTTP trace
// exports (protobuf or JSON), answers 200 with an empty (valid) response, and counts what it
// received. Its own process, so receiving spans does not take CPU from the load generator's
// measurements of the gateway. GET /stats returns the counts.
import { createServer } from 'node:http';

let exports = 0;
let bytes = 0;
const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ exports, bytes }));
    return;
  }
  req.on('data', (chunk) => (bytes += chunk.length));
  req.on('end', () => {
    exports += 1;
    res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/x-protobuf' }).end();
  });
});
server.listen(Number(process.env.PORT ?? 4318), '127.0.0.1', () => console.log(`otlp sink listening on ${process.env.PORT ?? 4318}`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
