import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ConfigError } from './settings.js';
import { formatIssues } from './format-issues.js';
import type { RegionPolicies } from '../regions/policy.js';

/** Wire protocols a supplier can speak; one folder per protocol in gateway/src/suppliers. */
export const supplierProtocols = ['openai', 'anthropic', 'openai-responses'] as const;
/** A supplier's wire protocol. */
export type SupplierProtocol = (typeof supplierProtocols)[number];

/**
 * What a model can be called for; requests needing a capability the model lacks are refused.
 * `tools` and `vision` qualify `chat` (function calling, image input); `auto` relies on them.
 */
export const modelCapabilities = ['chat', 'tools', 'vision', 'embeddings', 'rerank', 'transcription', 'speech'] as const;
/** Capabilities of a model that declares none: a chat model with tools and image input. */
export const defaultCapabilities: readonly ModelCapability[] = ['chat', 'tools', 'vision'];
/** One model capability. */
export type ModelCapability = (typeof modelCapabilities)[number];

/** Region codes are upper-case so `eu` and `EU` can never name two regions. */
export const regionCode = z.string().regex(/^[A-Z][A-Z0-9-]{0,31}$/, 'must be an upper-case region code such as EU or US-EAST');

/**
 * A region as a client writes it (a call's `region`, a key's `allowed_regions`): matched without
 * regard to case and stored upper-case, so `eu` means EU everywhere — one rule for calls and keys.
 */
export const regionInput = z
  .string()
  .trim()
  .toUpperCase()
  .pipe(z.string().regex(/^[A-Z][A-Z0-9-]{0,31}$/, 'must be a region code such as EU or US-EAST'));

/** Price fields of a model; at least one must be given so that no model is free by omission. */
const priceFields = ['input_usd_per_mtok', 'output_usd_per_mtok', 'usd_per_audio_minute', 'usd_per_mchar'] as const;

const modelSchema = z
  .strictObject({
    id: z.string().min(1).max(200),
    upstream: z.string().min(1).max(200).optional(),
    owned_by: z.string().min(1).max(100).optional(),
    input_usd_per_mtok: z.number().nonnegative().optional(),
    output_usd_per_mtok: z.number().nonnegative().optional(),
    cached_input_usd_per_mtok: z.number().nonnegative().optional(),
    /**
     * Input written to the supplier's prompt cache (Anthropic's `cache_creation_input_tokens`),
     * which such suppliers bill above plain input (1.25× for a 5-minute cache, 2× for an hour).
     */
    cache_write_input_usd_per_mtok: z.number().nonnegative().optional(),
    /** Transcription: per minute of audio. */
    usd_per_audio_minute: z.number().nonnegative().optional(),
    /** Speech: per million input characters. */
    usd_per_mchar: z.number().nonnegative().optional(),
    /** Speech: the voice sent when the client names none (the supplier's default otherwise). */
    default_voice: z.string().min(1).max(100).optional(),
    max_output_tokens: z.number().int().positive().optional(),
    /**
     * The field an output limit is sent in to an OpenAI-protocol supplier by a translation:
     * `max_tokens` (default; every OpenAI-compatible server reads it) or `max_completion_tokens`
     * (OpenAI's reasoning models — o-series, gpt-5 — refuse `max_tokens`).
     */
    output_limit_field: z.enum(['max_tokens', 'max_completion_tokens']).optional(),
    context_window: z.number().int().positive().optional(),
    capabilities: z.array(z.enum(modelCapabilities)).min(1).optional(),
  })
  .refine((m) => priceFields.some((f) => m[f] !== undefined), {
    message: `a model needs a price: at least one of ${priceFields.join(', ')} (0 for a free model)`,
  })
  // Speech and transcription are priced (and their budget reservations bounded) by these units:
  // without them such a model would be served free, outside every budget.
  .refine((m) => !m.capabilities?.includes('speech') || m.usd_per_mchar !== undefined, {
    message: 'a speech model needs usd_per_mchar (0 for a free model)',
    path: ['usd_per_mchar'],
  })
  .refine((m) => !m.capabilities?.includes('transcription') || m.usd_per_audio_minute !== undefined, {
    message: 'a transcription model needs usd_per_audio_minute (0 for a free model)',
    path: ['usd_per_audio_minute'],
  });

/** Environment variable names (a credential is never written into the catalogue itself). */
const envName = z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'must be an environment variable name');

/**
 * One credential of a supplier's pool (docs/routing.md "Credential pools"): the gateway spreads
 * calls over the pool and sidelines a credential the supplier rate-limits or rejects.
 */
const credentialSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,62}$/, 'must be lower-case letters, digits, dots, dashes and underscores'),
  api_key_env: envName,
});

const supplierSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'must be lower-case letters, digits and dashes'),
  protocol: z.enum(supplierProtocols),
  base_url: z.url({ protocol: /^https?$/ }),
  api_key_env: envName.optional(),
  /** A pool of credentials instead of the single `api_key_env`. */
  credentials: z.array(credentialSchema).min(1).max(32).optional(),
  region: regionCode,
  priority: z.number().int().min(0).default(100),
  weight: z.number().positive().default(1),
  timeout_ms: z.number().int().positive().max(3_600_000).default(300_000),
  connect_timeout_ms: z.number().int().positive().max(60_000).default(5_000),
  first_byte_timeout_ms: z.number().int().positive().max(600_000).optional(),
  models: z.array(modelSchema).min(1),
});

const catalogueFileSchema = z.strictObject({
  suppliers: z.array(supplierSchema).min(1),
});

/** A model as one supplier serves it, token prices in USD per million tokens. */
export interface SupplierModel {
  id: string;
  upstream: string;
  ownedBy: string;
  inputUsdPerMtok: number;
  outputUsdPerMtok: number;
  cachedInputUsdPerMtok: number;
  /** Input written to the prompt cache; the input price when the catalogue gives none. */
  cacheWriteInputUsdPerMtok: number;
  usdPerAudioMinute: number;
  usdPerMchar: number;
  defaultVoice: string | undefined;
  maxOutputTokens: number | undefined;
  /** Where a translation puts the output limit toward an OpenAI-protocol supplier. */
  outputLimitField: 'max_tokens' | 'max_completion_tokens';
  contextWindow: number | undefined;
  capabilities: readonly ModelCapability[];
}

/** One credential of a supplier's pool, resolved from the environment. */
export interface SupplierCredential {
  name: string;
  apiKey: string;
}

/** One upstream supplier from the catalogue, credential resolved from the environment. */
export interface Supplier {
  name: string;
  protocol: SupplierProtocol;
  baseUrl: string;
  /** The single credential (`api_key_env`); with a pool, the pool's first. */
  apiKey: string | undefined;
  /** The credential pool (`credentials`), in catalogue order; empty without one. */
  credentials: readonly SupplierCredential[];
  region: string;
  priority: number;
  weight: number;
  /** Whole call, streaming included. */
  timeoutMs: number;
  /** TCP (and TLS) connection set-up. */
  connectTimeoutMs: number;
  /** Until the response headers arrive, and the longest silence between body chunks. */
  firstByteTimeoutMs: number;
  models: ReadonlyMap<string, SupplierModel>;
}

/** A route: one supplier able to serve one public model id. */
export interface ModelRoute {
  supplier: Supplier;
  model: SupplierModel;
}

/** The parsed catalogue with the look-ups the hot path needs, all precomputed. */
export interface Catalogue {
  suppliers: readonly Supplier[];
  /** Public model id → routes, ordered by supplier priority (lower first). */
  routes: ReadonlyMap<string, readonly ModelRoute[]>;
  /** Public models for `/v1/models`, one entry per id. */
  models: readonly { id: string; ownedBy: string }[];
  /**
   * The region policies in force (RegionPolicy resources, written by the operator): a live view
   * the gateway attaches at start and keeps current from change announcements. Not part of the
   * file; absent, no policy restricts any region.
   */
  regionPolicies?: { current(): RegionPolicies };
}

/** Validates a parsed catalogue document and builds the look-up maps. */
export function buildCatalogue(document: unknown, env: Record<string, string | undefined>, source = 'catalogue'): Catalogue {
  const result = catalogueFileSchema.safeParse(document);
  if (!result.success) {
    throw new ConfigError(`invalid ${source}:\n${formatIssues(result.error.issues)}`);
  }
  const problems: string[] = [];
  const seenSuppliers = new Set<string>();
  const suppliers: Supplier[] = result.data.suppliers.map((raw, i) => {
    if (seenSuppliers.has(raw.name)) problems.push(`  - suppliers[${i}].name: duplicate supplier name "${raw.name}"`);
    seenSuppliers.add(raw.name);
    let apiKey: string | undefined;
    if (raw.api_key_env) {
      apiKey = env[raw.api_key_env];
      if (!apiKey) problems.push(`  - suppliers[${i}].api_key_env: environment variable ${raw.api_key_env} is not set`);
    }
    if (raw.api_key_env && raw.credentials)
      problems.push(`  - suppliers[${i}].credentials: give either api_key_env or a credentials pool, not both`);
    const credentials: SupplierCredential[] = [];
    (raw.credentials ?? []).forEach((c, j) => {
      if (credentials.some((other) => other.name === c.name))
        problems.push(`  - suppliers[${i}].credentials[${j}].name: duplicate credential "${c.name}" in supplier ${raw.name}`);
      const key = env[c.api_key_env];
      if (!key) problems.push(`  - suppliers[${i}].credentials[${j}].api_key_env: environment variable ${c.api_key_env} is not set`);
      else credentials.push({ name: c.name, apiKey: key });
    });
    apiKey ??= credentials[0]?.apiKey;
    const models = new Map<string, SupplierModel>();
    raw.models.forEach((m, j) => {
      if (models.has(m.id)) problems.push(`  - suppliers[${i}].models[${j}].id: duplicate model "${m.id}" in supplier ${raw.name}`);
      models.set(m.id, {
        id: m.id,
        upstream: m.upstream ?? m.id,
        ownedBy: m.owned_by ?? raw.name,
        inputUsdPerMtok: m.input_usd_per_mtok ?? 0,
        outputUsdPerMtok: m.output_usd_per_mtok ?? 0,
        cachedInputUsdPerMtok: m.cached_input_usd_per_mtok ?? m.input_usd_per_mtok ?? 0,
        cacheWriteInputUsdPerMtok: m.cache_write_input_usd_per_mtok ?? m.input_usd_per_mtok ?? 0,
        usdPerAudioMinute: m.usd_per_audio_minute ?? 0,
        usdPerMchar: m.usd_per_mchar ?? 0,
        defaultVoice: m.default_voice,
        maxOutputTokens: m.max_output_tokens,
        outputLimitField: m.output_limit_field ?? 'max_tokens',
        contextWindow: m.context_window,
        capabilities: m.capabilities ?? defaultCapabilities,
      });
    });
    return {
      name: raw.name,
      protocol: raw.protocol,
      baseUrl: raw.base_url.replace(/\/+$/, ''),
      apiKey,
      credentials,
      region: raw.region,
      priority: raw.priority,
      weight: raw.weight,
      timeoutMs: raw.timeout_ms,
      connectTimeoutMs: raw.connect_timeout_ms,
      firstByteTimeoutMs: Math.min(raw.first_byte_timeout_ms ?? 30_000, raw.timeout_ms),
      models,
    };
  });
  if (problems.length > 0) throw new ConfigError(`invalid ${source}:\n${problems.join('\n')}`);

  const routes = new Map<string, ModelRoute[]>();
  for (const supplier of suppliers) {
    for (const model of supplier.models.values()) {
      const list = routes.get(model.id) ?? [];
      list.push({ supplier, model });
      routes.set(model.id, list);
    }
  }
  for (const list of routes.values()) list.sort((a, b) => a.supplier.priority - b.supplier.priority);
  const models = [...routes.entries()].map(([id, list]) => ({ id, ownedBy: list[0]!.model.ownedBy }));
  return { suppliers, routes, models };
}

/** Reads and validates the YAML catalogue file; any problem throws a ConfigError naming the field. */
export function loadCatalogue(path: string, env: Record<string, string | undefined>): Catalogue {
  return buildCatalogue(readCatalogueDocument(path), env, `catalogue ${path}`);
}

/** The parsed (not yet validated) YAML catalogue document: what a database catalogue is seeded from. */
export function readCatalogueDocument(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    throw new ConfigError(`SVC_CATALOG: cannot read catalogue file ${path}: ${(cause as Error).message}`, { cause });
  }
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (cause) {
    throw new ConfigError(`SVC_CATALOG: ${path} is not valid YAML: ${(cause as Error).message}`, { cause });
  }
  return document;
}
