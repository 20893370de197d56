// Product pages' copy: what the platform does and how to use it. Plain data rendered by
// views/pages/article.ejs, so the words live in one place and templates stay markup.
import type { Article } from './article.js';

/** Marketing and product pages, by path. */
export const productArticles: Record<string, Article> = {
  '/features': {
    title: 'Features',
    lead: 'One endpoint for every model you use, with the controls a platform team needs: keys, budgets, regions, failover and an audit trail.',
    sections: [
      {
        heading: 'Both SDK families, unchanged',
        paragraphs: [
          'Call the gateway with the OpenAI or the Anthropic SDK: point the base URL at the gateway and use a gateway key. Chat, embeddings, rerank, transcription and speech go through the same key.',
        ],
      },
      {
        heading: 'Routing and failover',
        bullets: [
          'Each model is served by one or more suppliers, ranked by priority and weight.',
          'A supplier that keeps failing is taken out of rotation by a circuit breaker and retried after a cool-down.',
          'Every answer says which supplier served it and whether it failed over (x-svc-* headers).',
        ],
      },
      {
        heading: 'Budgets that hold',
        bullets: [
          'Per-key, per-user and per-organisation monthly budgets, enforced atomically before a request is sent upstream.',
          'Prepaid wallets debited exactly once per request, from the audit record.',
          'Rate limits per key, shared by every gateway replica.',
        ],
      },
      {
        heading: 'Data residency',
        paragraphs: [
          'Region policies say which suppliers may serve which region. A request tagged EU is never routed to a supplier outside the allowed list.',
        ],
      },
      {
        heading: 'Observability',
        paragraphs: [
          'Prometheus metrics, OpenTelemetry traces and a structured request log on every deployable; prompts stay out of logs unless you decide otherwise.',
        ],
      },
    ],
  },
  '/guide': {
    title: 'Getting started',
    lead: 'From a new account to your first answer in five minutes.',
    sections: [
      {
        heading: '1. Create an account',
        paragraphs: ['Sign up with your work email (or your company single sign-on), then follow the link in the verification email.'],
      },
      {
        heading: '2. Create a key',
        paragraphs: [
          'In the dashboard, open Keys and create one. The secret is shown once; store it in your secret manager. Keys can carry a budget, a rate limit, a model allow-list and allowed regions.',
        ],
      },
      {
        heading: '3. Call a model',
        paragraphs: ['Use the SDK you already have. Only the base URL and the key change:'],
        code: "import OpenAI from 'openai';\nconst client = new OpenAI({ baseURL: 'https://gateway.example.com/v1', apiKey: process.env.SVC_KEY });\nconst reply = await client.chat.completions.create({\n  model: 'gpt-4o-mini',\n  messages: [{ role: 'user', content: 'Hello!' }],\n});",
      },
      {
        heading: '4. Watch usage',
        paragraphs: ['Usage, spend and the request log appear in the dashboard within seconds; budgets and alerts keep surprises away.'],
      },
    ],
  },
  '/security': {
    title: 'Security',
    lead: 'Built so that a leaked log, a stolen database dump or a curious operator reveals as little as possible.',
    sections: [
      {
        heading: 'Secrets',
        bullets: [
          'API keys are stored as keyed hashes (HMAC with a server-side pepper); the secret is shown once.',
          'Passwords are hashed with Argon2id.',
          'Verification, reset, invite and sign-in hand-off links are single-use, expire quickly and are stored hashed.',
        ],
      },
      {
        heading: 'Sessions',
        bullets: [
          'Server-side sessions behind an opaque, HttpOnly, SameSite=Lax cookie (Secure over HTTPS).',
          'The session id changes at sign-in; sign-out and suspension end sessions everywhere.',
          'Every state-changing browser request must come from the portal’s own origin.',
        ],
      },
      {
        heading: 'Logs',
        paragraphs: ['Credentials, cookies and tokens are redacted from every log line; prompt text is kept out of logs by default.'],
      },
    ],
  },
  '/controls': {
    title: 'Controls',
    lead: 'The levers an administrator has over spend, access and data location.',
    sections: [
      {
        heading: 'Access',
        bullets: [
          'Roles: owner, platform administrator, organisation administrator, department administrator, member.',
          'Administrators see their own organisation or department; platform administrators see all.',
          'Invites bring people into the right organisation and department.',
        ],
      },
      {
        heading: 'Spend',
        bullets: [
          'Monthly budgets on keys, users and organisations.',
          'Budget alerts by email to people who asked for them.',
          'Prepaid wallets with optional automatic top-up.',
        ],
      },
      {
        heading: 'Routing',
        bullets: [
          'Model allow-lists per key.',
          'Region policies for data residency.',
          'Supplier priorities and weights, changed without a restart.',
        ],
      },
    ],
  },
  '/certifications': {
    title: 'Certifications and compliance',
    lead: 'What we can show an auditor today, and how.',
    sections: [
      {
        heading: 'Evidence you can export',
        bullets: [
          'Per-request audit records: who, which key, which model and supplier, tokens and cost.',
          'Saved and scheduled reports, exportable as CSV.',
          'Legal acceptance per user, by version.',
        ],
      },
      {
        heading: 'Your deployment, your controls',
        paragraphs: [
          'The platform runs in your Kubernetes cluster with your PostgreSQL and Redis, so it inherits the certifications of the infrastructure you run it on. We do not claim certificates we do not hold.',
        ],
      },
    ],
  },
  '/developers': {
    title: 'Developers',
    lead: 'Everything about calling the gateway from code.',
    sections: [
      {
        heading: 'OpenAI SDK',
        code: "import OpenAI from 'openai';\nconst client = new OpenAI({ baseURL: 'https://gateway.example.com/v1', apiKey: process.env.SVC_KEY });\nconst stream = await client.chat.completions.create({ model: 'gpt-4o-mini', stream: true,\n  messages: [{ role: 'user', content: 'Write a haiku about routers' }] });\nfor await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? '');",
      },
      {
        heading: 'Anthropic SDK',
        code: "import Anthropic from '@anthropic-ai/sdk';\nconst client = new Anthropic({ baseURL: 'https://gateway.example.com', apiKey: process.env.SVC_KEY });\nconst message = await client.messages.create({ model: 'gpt-4o-mini', max_tokens: 256,\n  messages: [{ role: 'user', content: 'Hello!' }] });",
      },
      {
        heading: 'Errors you can act on',
        paragraphs: [
          'Every error carries a stable code, a human message and whether a retry may help. The catalogue lists what to do for each code; both SDKs surface it as their usual error type.',
        ],
      },
      {
        heading: 'Headers worth reading',
        bullets: [
          'x-request-id: quote it when asking for help.',
          'x-svc-model and x-svc-supplier: who answered.',
          'x-svc-failover: whether the first choice was skipped.',
        ],
      },
    ],
  },
  '/agents': {
    title: 'Agents',
    lead: 'Long-running agents need predictable cost, resilient calls and a trail of what they did.',
    sections: [
      {
        heading: 'Give each agent its own key',
        paragraphs: ['A key per agent gives it a budget and a rate limit of its own, and its usage shows up separately in reports.'],
      },
      {
        heading: 'Tools and streaming',
        paragraphs: [
          'Tool calls and streaming work through both SDKs; the gateway translates between the OpenAI and Anthropic wire formats when the serving supplier speaks the other one.',
        ],
      },
      {
        heading: 'Sticky sessions',
        paragraphs: [
          'Send a session key and a conversation stays on the same supplier while it is healthy, which keeps provider-side caches warm.',
        ],
      },
    ],
  },
  '/resources': {
    title: 'Resources',
    lead: 'Guides and references for teams running the platform.',
    sections: [
      {
        heading: 'Read',
        bullets: [
          'Getting started: your first call in five minutes.',
          'API reference: endpoints, parameters and error codes.',
          'Architecture: how a request flows and where state lives.',
          'Security: how secrets, sessions and logs are handled.',
        ],
      },
      {
        heading: 'Operate',
        bullets: [
          'Helm chart and Kubernetes resources for the gateway, operator and portal.',
          'Prometheus metrics and ready-made alerts.',
          'Region policies and managed keys as Kubernetes resources.',
        ],
      },
    ],
  },
  '/partners': {
    title: 'Partners',
    lead: 'Resellers and integrators run the portal under their own domain.',
    sections: [
      {
        heading: 'Your domain, one sign-in',
        paragraphs: [
          'A reseller portal on its own domain completes single sign-on through a one-time hand-off link: valid for under a minute, usable once, and only on the domain it was made for.',
        ],
      },
      {
        heading: 'Linked accounts',
        paragraphs: ['Partner account systems can be linked so that usage and billing roll up where your customers expect them.'],
      },
    ],
  },
  '/architecture': {
    title: 'Architecture',
    lead: 'Three deployables, one shared library, PostgreSQL as the system of record and Redis for hot state.',
    sections: [
      {
        heading: 'Gateway',
        paragraphs: [
          'Authenticates the key, enforces rate limits and budgets in one atomic step, picks a supplier, translates the request if needed and streams the answer back. Audit records are written asynchronously and durably.',
        ],
      },
      {
        heading: 'Operator',
        paragraphs: [
          'Reconciles Kubernetes resources (managed keys, region policies, routes) into the database and announces changes; every gateway replica reloads within a second.',
        ],
      },
      {
        heading: 'Portal',
        paragraphs: [
          'This site: accounts, dashboard, billing and administration. It writes through the same repositories as the Management API and never calls the gateway.',
        ],
      },
      {
        heading: 'State',
        bullets: [
          'PostgreSQL: keys, users, wallets, audit log, catalogue.',
          'Redis: counters, circuit state, sessions affinity, change announcements.',
          'Both have embedded stand-ins for a laptop: PGlite and an in-process store.',
        ],
      },
    ],
  },
  '/platform': {
    title: 'The platform',
    lead: 'An LLM gateway you run yourself: one API for your whole organisation, every supplier behind it.',
    sections: [
      { heading: 'For developers', paragraphs: ['Keep the SDK you know. Change the base URL, get failover, budgets and one bill.'] },
      {
        heading: 'For platform teams',
        paragraphs: ['Kubernetes-native: a Helm chart, custom resources for keys and region policies, metrics and traces out of the box.'],
      },
      {
        heading: 'For finance',
        paragraphs: ['Prepaid wallets, budgets per team, usage reports by organisation, department, key and model.'],
      },
    ],
  },
  '/contact': {
    title: 'Contact',
    lead: 'Talk to the people who run this platform.',
    sections: [
      {
        heading: 'Support',
        paragraphs: [
          'Signed-in users reach support from the dashboard. Quote the x-request-id of a failing call and we can find it in the audit log.',
        ],
      },
      {
        heading: 'Sales and partnerships',
        paragraphs: ['Write to the platform owner at the address your administrator gave you, or ask your account manager.'],
      },
      {
        heading: 'Security reports',
        paragraphs: ['Report vulnerabilities privately to the platform owner; please do not open public issues for them.'],
      },
    ],
  },
  '/api-docs': {
    title: 'API reference',
    lead: 'The gateway speaks the OpenAI and Anthropic wire formats. Authenticate with a gateway key as a Bearer token (or x-api-key for the Anthropic SDK).',
    sections: [
      {
        heading: 'Inference endpoints',
        bullets: [
          'POST /v1/chat/completions: OpenAI chat, streaming and tools.',
          'POST /v1/messages: Anthropic messages, streaming and tools; POST /v1/messages/count_tokens.',
          'POST /v1/responses: OpenAI Responses.',
          'POST /v1/embeddings and POST /v1/rerank.',
          'POST /v1/audio/transcriptions and POST /v1/audio/speech.',
          'GET /v1/models: the models your key may use.',
        ],
      },
      {
        heading: 'A request',
        code: 'curl https://gateway.example.com/v1/chat/completions \\\n  -H "Authorization: Bearer $SVC_KEY" -H \'Content-Type: application/json\' \\\n  -d \'{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello!"}]}\'',
      },
      {
        heading: 'Errors',
        paragraphs: [
          'Errors have a stable code, a type both SDKs understand, a human message and whether retrying can help (also in the x-should-retry header). A 429 or 503 carries Retry-After.',
        ],
      },
      {
        heading: 'Management API',
        paragraphs: [
          'Administrators manage keys, budgets and wallets under /v1/management with the admin key; the dashboard does the same for signed-in users.',
        ],
      },
    ],
  },
  '/account/suspended': {
    title: 'Account suspended',
    lead: 'This account is suspended, so it cannot sign in and its keys do not work.',
    sections: [
      {
        heading: 'What you can do',
        paragraphs: [
          'Suspension is usually about an unpaid balance or a breach of the acceptable use policy. Contact your organisation administrator or the platform owner; once they reinstate the account you can sign in again.',
        ],
      },
    ],
  },
  '/account/archived': {
    title: 'Account archived',
    lead: 'This account has been archived and can no longer be used.',
    sections: [
      {
        heading: 'What you can do',
        paragraphs: [
          'Archived accounts keep their history for billing and audit but cannot sign in. If you need access again, ask your organisation administrator to invite you with a new account.',
        ],
      },
    ],
  },
};
