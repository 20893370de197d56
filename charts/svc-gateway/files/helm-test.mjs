// `helm test`: the release answers /health and, with the simulator on, serves a real inference:
// a key is created through the Management API with the admin key, used for one chat completion
// and revoked. Run by templates/tests/gateway-test.yaml with the chart's image (node, no
// dependencies); exits non-zero with a message saying which step failed.
const base = (process.env.GATEWAY_URL ?? '').replace(/\/+$/, '');
const adminKey = process.env.SVC_ADMIN_KEY ?? '';
const model = process.env.SVC_TEST_MODEL ?? '';

async function call(step, method, path, key, body) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { ...(key && { authorization: `Bearer ${key}` }), ...(body && { 'content-type': 'application/json' }) },
    body: body && JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${step}: ${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : {};
}

async function main() {
  if (!base) throw new Error('GATEWAY_URL is not set');
  await call('health', 'GET', '/health');
  console.log(`${base}/health: ok`);
  if (!model) return;
  if (!adminKey) throw new Error('SVC_ADMIN_KEY is not set');
  const created = await call('create a key', 'POST', '/v1/manage/keys', adminKey, { name: 'helm-test', allowed_models: [model] });
  try {
    const completion = await call('inference', 'POST', '/v1/chat/completions', created.key, {
      model,
      messages: [{ role: 'user', content: 'helm test' }],
      max_tokens: 16,
    });
    const content = completion.choices?.[0]?.message?.content;
    if (typeof content !== 'string' || content.length === 0)
      throw new Error(`inference: no message content in ${JSON.stringify(completion).slice(0, 300)}`);
    console.log(`chat completion with ${model}: ${completion.usage?.total_tokens ?? '?'} tokens`);
  } finally {
    await call('revoke the key', 'DELETE', `/v1/manage/keys/${created.id}`, adminKey);
  }
}

main().catch((error) => {
  console.error(`helm test failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
