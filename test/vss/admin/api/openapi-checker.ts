/**
 * Checks answers against the API's own OpenAPI document: each (method, path, status) must be
 * documented and the body must validate against the documented schema (compiled with Ajv, JSON
 * Schema 2020-12 as OpenAPI 3.1 uses). Records which statuses each route answered, so a suite can
 * assert that every documented route was seen succeeding and failing.
 */
import assert from 'node:assert/strict';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

interface OpenApiOperation {
  responses?: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }> }>;
}
export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, OpenApiOperation>>;
  components?: Record<string, unknown>;
}

interface Route {
  method: string;
  template: string;
  pattern: RegExp;
}

export class OpenApiChecker {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly compiled = new Map<string, ValidateFunction>();
  private readonly routes: Route[] = [];
  /** `METHOD template` → statuses answered. */
  readonly seen = new Map<string, Set<number>>();

  constructor(readonly document: OpenApiDocument) {
    addFormats.default(this.ajv);
    for (const [template, operations] of Object.entries(document.paths)) {
      const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`);
      for (const method of Object.keys(operations)) {
        this.routes.push({ method: method.toUpperCase(), template, pattern });
      }
    }
  }

  /** Every documented route, as `METHOD template`. */
  get documentedRoutes(): string[] {
    return this.routes.map((r) => `${r.method} ${r.template}`);
  }

  /** Asserts the answer matches the document; returns false for paths the document leaves out. */
  check(method: string, url: string, status: number, contentType: string | undefined, body: string): boolean {
    const path = url.split('?')[0] ?? url;
    const route = this.routes.find((r) => r.method === method && r.pattern.test(path));
    if (route === undefined) return false;
    const name = `${route.method} ${route.template}`;
    const seen = this.seen.get(name) ?? new Set<number>();
    seen.add(status);
    this.seen.set(name, seen);
    const responses = this.document.paths[route.template]?.[method.toLowerCase()]?.responses ?? {};
    const documented = responses[String(status)] ?? responses[`${String(status)[0]}XX`];
    assert.ok(
      documented,
      `${name} answered ${status}, which the document does not list: ${body.slice(0, 300)}`,
    );
    const media = (contentType ?? '').split(';')[0]!.trim();
    const content = documented.content ?? {};
    if (media !== 'application/json') {
      assert.ok(content[media] ?? content['text/plain'], `${name} ${status}: ${media} is not documented`);
      return true;
    }
    const schema = content['application/json']?.schema;
    assert.ok(schema, `${name} ${status}: no JSON schema documented`);
    const key = `${name} ${status}`;
    let validate = this.compiled.get(key);
    if (validate === undefined) {
      validate = this.ajv.compile({
        ...schema,
        $id: `urn:lattice:${encodeURIComponent(key)}`,
        components: this.document.components,
      });
      this.compiled.set(key, validate);
    }
    const value: unknown = JSON.parse(body);
    assert.ok(
      validate(value),
      `${name} ${status} does not match the document: ${this.ajv.errorsText(validate.errors)}\n${body.slice(0, 500)}`,
    );
    return true;
  }
}
