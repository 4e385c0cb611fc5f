// GET /docs: the API reference. Redoc's standalone bundle (npm package redoc, served by kobo itself from
// node_modules at /docs/redoc.standalone.js) renders /v1/openapi.json grouped by tag, with search, examples
// and a curl sample per operation; a plain listing inside <noscript> serves readers without JavaScript.
// Main thread, rendered at start. Invariant: no external asset: the page works offline under DOCS_CSP.
import fs from 'node:fs';
import { createRequire } from 'node:module';

/** Only this server's own script, document and blob workers (Redoc's search); styles inline (Redoc injects them). */
export const DOCS_CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
export const REDOC_BUNDLE_PATH = '/docs/redoc.standalone.js';

let bundle: string | undefined;
/** The Redoc bundle from node_modules (a dependency), read on first request and kept. */
export function redocBundle(): string {
  bundle ??= fs.readFileSync(createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js'), 'utf8');
  return bundle;
}

interface Schema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  description?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
}

interface Operation {
  summary?: string;
  tags?: string[];
  parameters?: Array<{ name?: string; in: string; required: boolean; schema: Schema }>;
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses?: Record<string, { description: string; content?: Record<string, { schema: Schema }> }>;
  security?: unknown[];
}

interface Document {
  info?: { title?: string; version?: string };
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}

const DEPTH_MAX = 6;
const REF_PREFIX = '#/components/schemas/';
/** The document being rendered: renderDocsPage is synchronous, so $refs resolve against it. */
let components: Record<string, Schema> = {};

/** A `$ref` replaced by the component it names (unknown references stay as they are). */
function deref(schema: Schema): Schema {
  if (schema.$ref === undefined || !schema.$ref.startsWith(REF_PREFIX)) return schema;
  return components[schema.$ref.slice(REF_PREFIX.length)] ?? schema;
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** One line per field: name, type, constraints; nested objects indented. */
function typeOf(schema_: Schema): string {
  if (schema_.$ref !== undefined) return schema_.$ref.replace(REF_PREFIX, '');
  const schema = schema_;
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum !== undefined) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives !== undefined) return alternatives.map(typeOf).join(' | ');
  const base = Array.isArray(schema.type) ? schema.type.join(' | ') : schema.type ?? 'any';
  if (base === 'array' && schema.items !== undefined) return `array of ${typeOf(schema.items)}`;
  const limits: string[] = [];
  if (schema.format !== undefined) limits.push(schema.format);
  if (schema.minimum !== undefined) limits.push(`≥ ${schema.minimum}`);
  if (schema.maximum !== undefined) limits.push(`≤ ${schema.maximum}`);
  if (schema.minLength !== undefined) limits.push(`length ≥ ${schema.minLength}`);
  if (schema.maxLength !== undefined) limits.push(`length ≤ ${schema.maxLength}`);
  if (schema.pattern !== undefined) limits.push(`/${schema.pattern}/`);
  return limits.length === 0 ? base : `${base} (${limits.join(', ')})`;
}

function fields(schema_: Schema, depth = 0): string {
  const schema = deref(schema_);
  const target = deref(schema.items !== undefined && schema.properties === undefined ? schema.items : schema);
  if (target.properties === undefined || depth > DEPTH_MAX) return '';
  const required = new Set(target.required ?? []);
  const rows = Object.entries(target.properties).map(([name, field]) => {
    const nested = fields(field, depth + 1);
    const note = field.description === undefined ? '' : ` — ${escape(field.description)}`;
    return `<li><code>${escape(name)}</code>${required.has(name) ? '' : ' <i>optional</i>'}: ${escape(typeOf(field))}${note}${nested}</li>`;
  });
  return `<ul>${rows.join('')}</ul>`;
}

function operationHtml(method: string, path: string, op: Operation): string {
  const id = `${method}-${path}`.replace(/[^A-Za-z0-9]+/g, '-');
  const auth = (op.security ?? []).length === 0 ? 'public' : 'Authorization: Bearer sk_…';
  const params = (op.parameters ?? []).map((p) => `<li><code>${escape(p.name ?? '')}</code> (${p.in}${p.required ? ', required' : ''}): ${escape(typeOf(p.schema))}</li>`);
  const body = op.requestBody?.content['application/json']?.schema;
  const responses = Object.entries(op.responses ?? {}).map(([status, r]) => {
    const schema = r.content?.['application/json']?.schema;
    const detail = status.startsWith('2') && schema !== undefined ? fields(schema) : '';
    return `<li><b>${status}</b> ${escape(r.description)}${detail}</li>`;
  });
  return `<section id="${id}"><h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${escape(path)}</code></h3>
<p>${escape(op.summary ?? '')} <span class="auth">${auth}</span></p>
${params.length === 0 ? '' : `<h4>Parameters</h4><ul>${params.join('')}</ul>`}
${body === undefined ? '' : `<h4>Body (application/json)</h4>${fields(body) || `<p>${escape(typeOf(body))}</p>`}`}
<h4>Responses</h4><ul>${responses.join('')}</ul></section>`;
}

/** The static listing: every operation with its parameters, body fields and responses, no script. */
function staticListing(document: object): string {
  const doc = document as Document;
  components = doc.components?.schemas ?? {};
  const title = `${doc.info?.title ?? 'kobo API'} ${doc.info?.version ?? ''}`.trim();
  const operations: Array<[string, string, Operation]> = [];
  for (const [path, methods] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(methods)) operations.push([method, path, op]);
  const toc = operations.map(([method, path]) => `<li><a href="#${`${method}-${path}`.replace(/[^A-Za-z0-9]+/g, '-')}">${method.toUpperCase()} ${escape(path)}</a></li>`).join('');
  return `<style>
.static{font:15px/1.5 system-ui,sans-serif;display:flex;color:#1d2330}
.static nav{width:330px;height:100vh;overflow:auto;position:sticky;top:0;background:#f4f5f7;padding:12px;box-sizing:border-box;font-size:13px}
.static nav ul{list-style:none;padding:0}.static main{flex:1;padding:16px 32px;max-width:960px}
.static section{border-top:1px solid #dde;padding:8px 0}.static code{font:13px ui-monospace,monospace}
.m{display:inline-block;min-width:56px;text-align:center;border-radius:4px;color:#fff;font-size:12px;padding:2px 4px}
.get{background:#2f7d32}.post{background:#1565c0}.patch{background:#8e5b00}.auth{color:#667;font-size:13px}
</style><div class="static">
<nav><b>${escape(title)}</b><p>Machine-readable: <a href="/v1/openapi.json">/v1/openapi.json</a></p><ul>${toc}</ul></nav>
<main><h1>${escape(title)}</h1>
<p>Every error is <code>{"error":{"code","message","request_id"}}</code>; every response carries <code>X-Request-Id</code>.
Money-moving POSTs need an <code>Idempotency-Key</code> header.</p>
${operations.map(([method, path, op]) => operationHtml(method, path, op)).join('\n')}
</main></div>`;
}

export function renderDocsPage(document: object): string {
  const doc = document as Document;
  const title = `${doc.info?.title ?? 'kobo API'} ${doc.info?.version ?? ''}`.trim();
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} — API reference</title><link rel="icon" href="data:,">
</head><body style="margin:0">
<redoc spec-url="/v1/openapi.json" expand-responses="200,201" json-sample-expand-level="3" required-props-first="true" hide-hostname="true" path-in-middle-panel="true"></redoc>
<noscript>${staticListing(document)}</noscript>
<script src="${REDOC_BUNDLE_PATH}"></script>
</body></html>`;
}
