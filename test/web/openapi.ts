// Responses checked against docs/openapi.json: a small validator of the JSON Schema the document
// uses (type, enum, required, properties, additionalProperties, items, pattern, minimum,
// maximum, minLength, format date-time, $ref), written for these tests, not a general one.

import { readFileSync } from 'node:fs';
import path from 'node:path';

type Schema = { readonly [key: string]: unknown };

const repo = path.resolve(import.meta.dirname, '..', '..');
export const OPENAPI = JSON.parse(readFileSync(path.join(repo, 'docs', 'openapi.json'), 'utf8')) as Schema;

function resolve(schema: Schema): Schema {
  const ref = schema.$ref;
  if (typeof ref !== 'string') return schema;
  let at: unknown = OPENAPI;
  for (const part of ref.replace(/^#\//, '').split('/')) at = (at as Schema)[part];
  if (at === undefined) throw new Error(`openapi.json: ${ref} does not resolve`);
  return resolve(at as Schema);
}

const typeOf = (value: unknown): string =>
  value === null
    ? 'null'
    : Array.isArray(value)
      ? 'array'
      : Number.isInteger(value)
        ? 'integer'
        : typeof value;

/** Every way `value` breaks `schema`, each with where (`$.items[0].memory`). */
export function violations(value: unknown, schema: Schema, where = '$'): string[] {
  const s = resolve(schema);
  const out: string[] = [];
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
    const actual = typeOf(value);
    if (!types.some((t) => t === actual || (t === 'number' && actual === 'integer'))) {
      return [`${where}: expected ${types.join('|')}, got ${actual}`];
    }
  }
  if (Array.isArray(s.enum) && !s.enum.includes(value))
    out.push(`${where}: ${JSON.stringify(value)} not in ${JSON.stringify(s.enum)}`);
  if (typeof value === 'string') {
    if (typeof s.pattern === 'string' && !new RegExp(s.pattern, 'u').test(value))
      out.push(`${where}: ${JSON.stringify(value)} does not match ${s.pattern}`);
    if (typeof s.minLength === 'number' && value.length < s.minLength)
      out.push(`${where}: shorter than ${s.minLength}`);
    if (
      s.format === 'date-time' &&
      !(
        /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value) &&
        !Number.isNaN(Date.parse(value))
      )
    ) {
      out.push(`${where}: ${JSON.stringify(value)} is not a date-time`);
    }
  }
  if (typeof value === 'number') {
    if (typeof s.minimum === 'number' && value < s.minimum) out.push(`${where}: ${value} < ${s.minimum}`);
    if (typeof s.maximum === 'number' && value > s.maximum) out.push(`${where}: ${value} > ${s.maximum}`);
  }
  if (Array.isArray(value) && s.items !== undefined) {
    for (const [i, item] of value.entries())
      out.push(...violations(item, s.items as Schema, `${where}[${i}]`));
  }
  if (typeOf(value) === 'object') {
    const object = value as Schema;
    const properties = (s.properties ?? {}) as Record<string, Schema>;
    for (const key of (s.required ?? []) as string[])
      if (!(key in object)) out.push(`${where}: missing ${key}`);
    for (const [key, v] of Object.entries(object)) {
      if (key in properties) out.push(...violations(v, properties[key] as Schema, `${where}.${key}`));
      else if (s.additionalProperties === false) out.push(`${where}: unexpected ${key}`);
    }
  }
  return out;
}

/** The schema of the response documented for `method` on `template` with `status` (or default). */
export function responseSchema(method: string, template: string, status: number): Schema {
  const item = (OPENAPI.paths as Record<string, Schema>)[template];
  const operation = item?.[method.toLowerCase()] as Schema | undefined;
  if (operation === undefined) throw new Error(`openapi.json documents no ${method} ${template}`);
  const responses = operation.responses as Record<string, Schema>;
  const response = resolve((responses[String(status)] ?? responses.default) as Schema);
  const content = response.content as Record<string, Schema>;
  // An event stream's schema is that of each event's data.
  const body = (content['application/json'] ?? content['text/event-stream']) as Schema;
  return body.schema as Schema;
}

/**
 * Throws naming every violation when `body` is not what the document says for this response;
 * `template` null: a resource or method the document does not have, answered with its Error.
 */
export function checkResponse(method: string, template: string | null, status: number, body: unknown): void {
  const schema =
    template === null ? { $ref: '#/components/schemas/Error' } : responseSchema(method, template, status);
  const found = violations(body, schema);
  if (found.length > 0)
    throw new Error(`${method} ${template} ${status}: ${found.join('; ')}\n${JSON.stringify(body)}`);
}
