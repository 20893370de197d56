// Validates custom resources against a CRD the way the API server does, without an API server:
// defaults, then the OpenAPI schema (types, required, enums, patterns, bounds), list-type
// invariants, then the x-kubernetes-validations CEL rules. Deliberate choices (docs/crds.md):
// - Unknown fields are errors, as with kubectl's default strict field validation (the server
//   would otherwise prune them silently, which hides typos).
// - CEL rules are skipped when the object has type errors, like the API server does.
// - Transition rules (those naming oldSelf) run only when an old object is given.
import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { evaluate, parse } from '@marcbachmann/cel-js';
import { parse as parseYaml } from 'yaml';

/** The subset of a structural schema node this validator reads. */
export interface SchemaNode {
  type?: string;
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  additionalProperties?: SchemaNode | boolean;
  required?: string[];
  'x-kubernetes-validations'?: CelRule[];
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  [keyword: string]: unknown;
}

/** One x-kubernetes-validations entry. */
export interface CelRule {
  rule: string;
  message?: string;
  fieldPath?: string;
}

/** A CustomResourceDefinition as read from crds/*.yaml (the fields the tests look at). */
export interface Crd {
  metadata: { name: string };
  spec: {
    group: string;
    scope: 'Namespaced' | 'Cluster';
    names: { kind: string; plural: string; singular: string; shortNames?: string[]; categories?: string[] };
    versions: Array<{
      name: string;
      served: boolean;
      storage: boolean;
      subresources?: { status?: object };
      additionalPrinterColumns?: Array<{ name: string; type: string; jsonPath: string; priority?: number }>;
      schema: { openAPIV3Schema: SchemaNode };
    }>;
  };
}

/** One reason an object is refused: `<path>: <rule>: <message>` when printed. */
export interface Violation {
  path: string;
  rule: string;
  message: string;
}

/** Prints a violation the way the test fixtures' `# expect:` lines name it. */
export function describeViolation(v: Violation): string {
  return `${v.path || '<root>'}: ${v.rule}: ${v.message}`;
}

/** Reads a CRD file. */
export function readCrd(path: string): Crd {
  return parseYaml(readFileSync(path, 'utf8')) as Crd;
}

/** Builds a validator for the (single) version of a CRD. */
export function crdValidator(crd: Crd): (object: unknown, old?: unknown) => Violation[] {
  const version = crd.spec.versions[0];
  if (!version) throw new Error(`${crd.metadata.name} has no version`);
  const schema = version.schema.openAPIV3Schema;
  const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false });
  // RFC 3339, as metav1.Time serialises.
  ajv.addFormat('date-time', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) });
  ajv.addFormat('int32', { type: 'number', validate: (n: number) => n >= -(2 ** 31) && n < 2 ** 31 });
  const validateSchema = ajv.compile(strictFields(schema));
  return (object, old) => {
    const copy = structuredClone(object);
    const schemaViolations = runSchema(validateSchema, copy);
    const violations = [...schemaViolations, ...listViolations(schema, copy, '')];
    const typeErrors = schemaViolations.some((v) => v.rule === 'type');
    if (!typeErrors) {
      const previous = old === undefined ? undefined : structuredClone(old);
      if (previous !== undefined) runSchema(validateSchema, previous); // defaults, as stored
      violations.push(...celViolations(schema, copy, previous, ''));
    }
    return violations;
  };
}

/** Every CEL rule in a schema with the path of the node it sits on. */
export function celRules(schema: SchemaNode, path = ''): Array<{ path: string; rule: CelRule }> {
  const found = (schema['x-kubernetes-validations'] ?? []).map((rule) => ({ path, rule }));
  for (const [name, child] of Object.entries(schema.properties ?? {})) found.push(...celRules(child, join(path, name)));
  if (schema.items) found.push(...celRules(schema.items, `${path}[*]`));
  if (typeof schema.additionalProperties === 'object') found.push(...celRules(schema.additionalProperties, `${path}[*]`));
  return found;
}

/** Throws when a CEL expression does not parse. */
export function parseCel(expression: string): void {
  parse(expression);
}

// Objects with declared properties refuse undeclared ones (strict field validation).
function strictFields(schema: SchemaNode): SchemaNode {
  const copy: SchemaNode = { ...schema };
  if (schema.properties) {
    copy.properties = Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k, strictFields(v)]));
    if (schema.additionalProperties === undefined && !schema['x-kubernetes-preserve-unknown-fields']) copy.additionalProperties = false;
  }
  if (schema.items) copy.items = strictFields(schema.items);
  if (typeof schema.additionalProperties === 'object') copy.additionalProperties = strictFields(schema.additionalProperties);
  return copy;
}

function runSchema(validate: ValidateFunction, object: unknown): Violation[] {
  if (validate(object)) return [];
  return (validate.errors ?? []).map(toViolation);
}

function toViolation(error: ErrorObject): Violation {
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((s) => (/^\d+$/.test(s) ? `[${s}]` : `.${s}`))
    .join('')
    .replace(/^\./, '');
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return { path: join(path, String(params.missingProperty)), rule: 'required', message: 'Required value' };
    case 'additionalProperties':
      return { path: join(path, String(params.additionalProperty)), rule: 'unknown-field', message: 'unknown field' };
    case 'enum':
      return {
        path,
        rule: 'enum',
        message: `supported values: ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
      };
    default:
      return { path, rule: error.keyword, message: error.message ?? error.keyword };
  }
}

function join(path: string, name: string): string {
  return path === '' ? name : `${path}.${name}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// x-kubernetes-list-type set: no duplicate items; map: no two items with the same keys.
function listViolations(schema: SchemaNode, value: unknown, path: string): Violation[] {
  const found: Violation[] = [];
  if (Array.isArray(value)) {
    const listType = schema['x-kubernetes-list-type'];
    const identity = (item: unknown) =>
      listType === 'map' && isRecord(item)
        ? JSON.stringify((schema['x-kubernetes-list-map-keys'] ?? []).map((k) => item[k]))
        : JSON.stringify(item);
    if (listType === 'set' || listType === 'map') {
      const seen = new Set<string>();
      value.forEach((item, i) => {
        const id = identity(item);
        if (seen.has(id)) found.push({ path: `${path}[${i}]`, rule: 'duplicate', message: `Duplicate value: ${id}` });
        seen.add(id);
      });
    }
    if (schema.items) value.forEach((item, i) => found.push(...listViolations(schema.items as SchemaNode, item, `${path}[${i}]`)));
  } else if (isRecord(value)) {
    for (const [name, child] of Object.entries(value)) {
      const childSchema =
        schema.properties?.[name] ?? (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined);
      if (childSchema) found.push(...listViolations(childSchema, child, join(path, name)));
    }
  }
  return found;
}

// The API server evaluates each rule on every node where its field is present; `self` is the
// node's value with integers as CEL ints and numbers as doubles.
function celViolations(schema: SchemaNode, value: unknown, old: unknown, path: string): Violation[] {
  const found: Violation[] = [];
  for (const rule of schema['x-kubernetes-validations'] ?? []) {
    const transition = /\boldSelf\b/.test(rule.rule);
    if (transition && old === undefined) continue;
    const where = rule.fieldPath ? `${path}${rule.fieldPath}`.replace(/^\./, '') : path;
    const message = rule.message ?? `failed rule: ${rule.rule}`;
    try {
      const context = { self: toCel(schema, value), ...(transition && { oldSelf: toCel(schema, old) }) };
      if (evaluate(rule.rule, context) !== true) found.push({ path: where, rule: 'cel', message });
    } catch (error) {
      found.push({ path: where, rule: 'cel', message: `evaluation error: ${(error as Error).message.split('\n')[0]}` });
    }
  }
  if (Array.isArray(value) && schema.items) {
    const itemSchema = schema.items;
    value.forEach((item, i) => found.push(...celViolations(itemSchema, item, correlate(schema, old, item), `${path}[${i}]`)));
  } else if (isRecord(value)) {
    for (const [name, child] of Object.entries(value)) {
      const childSchema =
        schema.properties?.[name] ?? (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined);
      const oldChild = isRecord(old) ? old[name] : undefined;
      if (childSchema) found.push(...celViolations(childSchema, child, oldChild, join(path, name)));
    }
  }
  return found;
}

// Old list items are correlated only for list-type map, by their keys (as the API server does).
function correlate(schema: SchemaNode, old: unknown, item: unknown): unknown {
  if (schema['x-kubernetes-list-type'] !== 'map' || !Array.isArray(old) || !isRecord(item)) return undefined;
  const keys = schema['x-kubernetes-list-map-keys'] ?? [];
  return old.find((o) => isRecord(o) && keys.every((k) => o[k] === item[k]));
}

function toCel(schema: SchemaNode | undefined, value: unknown): unknown {
  if (schema?.type === 'integer' && typeof value === 'number') return BigInt(value);
  if (Array.isArray(value)) return value.map((v) => toCel(schema?.items, v));
  if (isRecord(value)) {
    const extra = typeof schema?.additionalProperties === 'object' ? schema.additionalProperties : undefined;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toCel(schema?.properties?.[k] ?? extra, v)]));
  }
  return value;
}
