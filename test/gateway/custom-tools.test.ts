// OpenAI's custom tools (free-text input) and allowed_tools through the gateway with the official
// openai SDK: a same-protocol supplier gets them as sent, and a conversation goes on after the
// call; a supplier of another protocol refuses them naming the field (docs/interfaces.md).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import OpenAI from 'openai';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.js';

describe('custom tools and allowed_tools', () => {
  let h: GatewayHarness;
  let openai: OpenAI;

  beforeAll(async () => {
    h = await startGatewayHarness([
      { name: 'sim-openai', region: 'EU', models: [{ id: 'gpt-4o-mini' }] },
      { name: 'sim-anthropic', region: 'EU', protocol: 'anthropic', models: [{ id: 'claude-x' }] },
    ]);
    openai = new OpenAI({ baseURL: `${h.gateway.url}/v1`, apiKey: await h.createKey(), maxRetries: 0 });
  });
  afterAll(async () => {
    await h?.close();
  });

  const sql = { type: 'custom' as const, custom: { name: 'sql', description: 'A SQL query' } };
  const weather = {
    type: 'function' as const,
    function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  };

  test('a forced custom tool is called, and the conversation goes on with its result', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'How many orders?' }];
    const first = await openai.chat.completions.create({
      model: 'gpt-4o-mini',
      messages,
      tools: [sql, weather],
      tool_choice: { type: 'custom', custom: { name: 'sql' } },
    });
    const call = first.choices[0]!.message.tool_calls![0]!;
    expect(call).toMatchObject({ type: 'custom', custom: { name: 'sql' } });
    const second = await openai.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [...messages, first.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: '42' }],
      tools: [sql, weather],
    });
    expect(second.choices[0]!.message.content).toBeTruthy();
  });

  test('allowed_tools limits the calls to the tools it names', async () => {
    const reply = await openai.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [sql, weather],
      tool_choice: {
        type: 'allowed_tools',
        allowed_tools: { mode: 'required', tools: [{ type: 'function', function: { name: 'get_weather' } }] },
      },
    });
    expect(reply.choices[0]!.message.tool_calls!.map((c) => (c.type === 'function' ? c.function.name : c.custom.name))).toEqual([
      'get_weather',
    ]);
  });

  test('toward an Anthropic-protocol supplier a custom tool is refused naming it', async () => {
    const refused = await openai.chat.completions
      .create({ model: 'claude-x', messages: [{ role: 'user', content: 'hi' }], tools: [weather, sql] })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('tools[1]');
  });
});
