/** What `npm start` prints once everything is up. */
export interface BannerFacts {
  database: string;
  store: string;
  gatewayUrl: string;
  metricsUrl: string | undefined;
  tracing: string;
  simulatorUrl: string;
  catalogue: string;
  dataDir: string;
  adminKey: string;
  demoKey: string;
}

/**
 * The start banner. Its snippets are README.md's "Calling the gateway" snippets with this run's
 * address: the key travels in SVC_KEY, so what the README shows works as written once the
 * `export` line has been pasted into a shell.
 */
export function banner(facts: BannerFacts): string {
  const base = facts.gatewayUrl;
  return `
svc LLM gateway is running (${facts.database}, ${facts.store})

  gateway     ${base}   (health: ${base}/health)
  metrics     ${facts.metricsUrl ?? 'off (SVC_METRICS_PORT=0)'}
  tracing     ${facts.tracing}
  simulator   ${facts.simulatorUrl}   (stands in for real suppliers; health: ${facts.simulatorUrl}/health)
  catalogue   ${facts.catalogue}
  data dir    ${facts.dataDir}
  admin key   ${facts.adminKey}   (Management API: /v1/manage/keys, see docs/keys.md)

Paste into another shell, in this directory (the snippets are README.md's):

export SVC_KEY=${facts.demoKey}

curl -s ${base}/v1/chat/completions \\
  -H "Authorization: Bearer $SVC_KEY" -H "Content-Type: application/json" \\
  -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello!"}]}'

# OpenAI SDK (installed by npm ci):
cat > hello.mjs <<'EOF'
import OpenAI from 'openai';
const client = new OpenAI({ baseURL: '${base}/v1', apiKey: process.env.SVC_KEY });
const reply = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello!' }] });
console.log(reply.choices[0].message.content);
EOF
node hello.mjs

Ctrl-C stops everything; data and keys survive a restart.
`;
}

/** Where the portal's emails go, as the banner says it: the mail server (never its credentials), else the outbox folder. */
export function mailDestination(smtpUrl: string | undefined, dataDir: string): string {
  if (!smtpUrl) return `emails go to ${dataDir}/outbox`;
  const server = new URL(smtpUrl);
  return `emails go to the mail server ${server.protocol}//${server.host}`;
}
