/**
 * Seeded corruptions of valid admin API bodies, for the fuzz test. Every mutation makes the body
 * invalid (so every answer must be a 4xx), and a single mutation says which field (or `body`,
 * `Content-Type`) the error should name: dropped and duplicated fields, wrong types, out-of-range
 * numbers, huge strings, deep nesting, invalid JSON bytes, random unicode and injection attempts in
 * names that become SQL identifiers, text SQL cannot store, JSON-holding fields broken in their
 * string form or inside.
 */

/** How a field may be corrupted (each kind lists only values the API must refuse). */
export type FieldKind =
  | 'name'
  | 'table'
  | 'variant'
  | 'text'
  | 'int0'
  | 'int1'
  | 'bool'
  | 'enum'
  | 'json'
  | 'openJson'
  | 'filter';

export interface RouteShape {
  url: string;
  valid: Record<string, unknown>;
  kinds: Record<string, FieldKind>;
  required: readonly string[];
}

export interface Mutated {
  /** The request body as sent. */
  payload: string | Buffer;
  contentType: string | undefined;
  /** The field the error must name (prefix match), when one mutation decides it. */
  field: string | undefined;
  /** What was done, for failure messages. */
  what: string;
}

export class Fuzzer {
  constructor(private readonly random: () => number) {}

  int(max: number): number {
    return Math.floor(this.random() * max);
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }

  /** Random unicode text with at least one code point outside ASCII (so never a valid name). */
  unicode(length: number): string {
    const chars: string[] = [String.fromCodePoint(0x80 + this.int(0x700))];
    for (let i = 1; i < length; i++) {
      const range = this.int(4);
      let cp: number;
      if (range === 0) cp = 0x20 + this.int(0x5f);
      else if (range === 1) cp = 0x80 + this.int(0x780);
      else if (range === 2) cp = 0x800 + this.int(0xd000);
      else cp = 0x10000 + this.int(0xfffff);
      chars.push(String.fromCodePoint(cp));
    }
    for (let i = chars.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [chars[i], chars[j]] = [chars[j]!, chars[i]!];
    }
    return chars.join('');
  }

  private wrongType(kind: FieldKind): unknown {
    const byKind: Record<FieldKind, unknown[]> = {
      name: [1, true, null, [], {}, ['entity']],
      table: [1, false, null, [], { t: 1 }],
      variant: [7, null, [], {}],
      text: [0, true, null, [], {}],
      int0: ['1', true, null, [], {}, 1.5, '0x10'],
      int1: ['1', false, null, [], {}, 2.5],
      bool: ['true', 1, 0, null, [], {}],
      enum: [1, true, null, [], {}],
      json: [1, true, null, [1, 2], '[1]', '"x"', '42', 'null', 'true'],
      openJson: [1, false, null, [], '[]', '"x"', '7', 'null'],
      filter: [1, true, null, [], '[]', '"criteria"'],
    };
    return this.pick(byKind[kind]);
  }

  private huge(): string {
    return 'h'.repeat(5000 + this.int(300_000));
  }

  /** Nested values too deep to build and stringify as objects stand in the body as placeholders. */
  private readonly deepTexts = new Map<string, string>();

  private deepText(): string {
    const depth = 17 + this.int(5000);
    return this.pick([
      `${'{"d":'.repeat(depth)}1${'}'.repeat(depth)}`,
      `${'['.repeat(depth)}${']'.repeat(depth)}`,
    ]);
  }

  private deep(): string {
    const placeholder = `\u0001deep${this.deepTexts.size}\u0001`;
    this.deepTexts.set(placeholder, this.deepText());
    return placeholder;
  }

  /** The body's JSON text, with each placeholder replaced by its nested value. */
  private serialize(body: unknown): string {
    let text = JSON.stringify(body);
    for (const [placeholder, nested] of this.deepTexts) {
      text = text.replace(JSON.stringify(placeholder), nested);
    }
    return text;
  }

  /** A value of `kind` the API must refuse, and a word for the failure message. */
  invalidValue(kind: FieldKind): [unknown, string] {
    const choice = this.int(6);
    if (choice === 0) return [this.wrongType(kind), 'wrong type'];
    if (choice === 1 && kind !== 'bool' && !kind.startsWith('int')) return [this.deep(), 'deep nesting'];
    switch (kind) {
      case 'name':
      case 'table':
      case 'variant':
        return this.pick<[unknown, string]>([
          [this.unicode(1 + this.int(40)), 'random unicode'],
          ['x; DROP TABLE vss_models', 'injection'],
          ['a"b', 'quote'],
          ["r'); DELETE FROM vss_stores; --", 'injection'],
          ['', 'empty'],
          [this.huge(), 'huge string'],
          [`ok\u0000nul`, 'NUL'],
          ['../../etc/passwd', 'path'],
          [kind === 'name' ? 'a b' : 'Upper', 'bad character'],
        ]);
      case 'text':
        return this.pick<[unknown, string]>([
          ['', 'empty'],
          [this.huge(), 'huge string'],
          [`${this.unicode(10)}\u0000`, 'NUL'],
          [`lone \ud800 surrogate`, 'lone surrogate'],
        ]);
      case 'int0':
        return this.pick<[unknown, string]>([
          [-1, 'negative'],
          [2 ** 31, 'too large'],
          [1e300, 'huge'],
          [-1e300, 'huge negative'],
        ]);
      case 'int1':
        return this.pick<[unknown, string]>([
          [0, 'zero'],
          [-5, 'negative'],
          [2 ** 31, 'too large'],
          [1e300, 'huge'],
        ]);
      case 'bool':
        return [this.wrongType(kind), 'wrong type'];
      case 'enum':
        return this.pick<[unknown, string]>([
          [this.unicode(1 + this.int(20)), 'random unicode'],
          ['', 'empty'],
          [this.huge(), 'huge string'],
          ['cosine', 'lower case'],
        ]);
      case 'filter': {
        const criterion = this.pick<Record<string, unknown>>([
          { column_name: this.pick(['a"b', 'x; DROP TABLE vss_models', 'id', 'Upper', this.unicode(8), '']) },
          { column_name: 'is_live', op: this.unicode(4) },
          { column_name: 'is_live', op: 'BETWEEN', values: ['1'] },
          { column_name: 'is_live', filter_value: { nested: true } },
          { column_name: 'is_live', values: 'not a list', op: 'IN' },
          { filter_value: 'x' },
          { column_name: 'is_live', surprise: 1 },
        ]);
        const filter = this.pick<unknown>([
          { criteria: [criterion] },
          { criteria: [{ column_name: 'ok', filter_value: '1' }, criterion] },
          { criteria: 'x' },
          { criteria: Array.from({ length: 65 }, () => ({ column_name: 'c', filter_value: '1' })) },
        ]);
        return this.int(2) === 0
          ? [filter, 'inner criteria']
          : [JSON.stringify(filter), 'inner criteria as a string'];
      }
      case 'json':
      case 'openJson':
        return this.pick<[unknown, string]>([
          [`{${this.unicode(5 + this.int(30))}`, 'invalid JSON string'],
          [`{"a": ${'['.repeat(40)}`, 'truncated JSON string'],
          [this.huge(), 'huge string'],
          [this.wrongType(kind), 'wrong type'],
          [this.deepText(), 'deep JSON string'],
          [{ ok: `bad \u0000 text` }, 'NUL inside'],
        ]);
    }
  }

  /** Corrupts one field in place; returns the field the error must name. */
  corruptField(shape: RouteShape, body: Record<string, unknown>): [string, string] {
    const field = this.pick(Object.keys(shape.kinds));
    const [value, what] = this.invalidValue(shape.kinds[field]!);
    body[field] = value;
    return [field, `${field}: ${what}`];
  }

  /** One random mutation of a copy of the route's valid body. */
  mutate(shape: RouteShape, rounds = 1): Mutated {
    this.deepTexts.clear();
    const body = structuredClone(shape.valid);
    const json = 'application/json';
    const kind = this.int(100);
    if (kind < 4) {
      const text = JSON.stringify(body);
      const cut = text.slice(0, this.int(text.length - 1));
      const junk = Buffer.from(
        Array.from({ length: this.int(12) }, () =>
          this.pick([0xff, 0xfe, 0xc3, 0x28, 0x7b, 0x3a, 0x2c, 0x61]),
        ),
      );
      return {
        payload: Buffer.concat([Buffer.from(cut), junk]),
        contentType: json,
        field: 'body',
        what: 'invalid JSON bytes',
      };
    }
    if (kind < 6) {
      return {
        payload: JSON.stringify(body),
        contentType: this.pick(['text/plain', 'application/xml', 'multipart/form-data; boundary=x']),
        field: 'Content-Type',
        what: 'wrong content type',
      };
    }
    if (kind < 8) {
      // A top-level object, however deep, is an object: nest arrays here.
      const depth = 1 + this.int(20_000);
      const top = this.pick<unknown>([
        [],
        'text',
        42,
        null,
        true,
        `${'['.repeat(depth)}${']'.repeat(depth)}`,
      ]);
      if (typeof top === 'string' && top.startsWith('[')) {
        return { payload: top, contentType: json, field: 'body', what: 'deep array' };
      }
      return { payload: this.serialize(top), contentType: json, field: 'body', what: 'not an object' };
    }
    if (kind < 9) return { payload: '', contentType: json, field: 'body', what: 'empty body' };
    if (kind < 10) {
      return {
        payload: JSON.stringify({ ...body, pad: 'p'.repeat(1024 * 1024) }),
        contentType: json,
        field: 'body',
        what: 'over the body limit',
      };
    }
    const whats: string[] = [];
    let field: string | undefined;
    for (let round = 0; round < rounds; round++) {
      const mutation = this.int(10);
      if (mutation === 0) {
        const dropped = this.pick(shape.required);
        delete body[dropped];
        field = dropped;
        whats.push(`drop ${dropped}`);
      } else if (mutation === 1) {
        const key = `x_${this.unicode(1 + this.int(12))}`;
        body[key] = this.pick([1, 'v', null, {}]);
        field = key;
        whats.push('unknown field');
      } else if (mutation === 2) {
        // Duplicated key in the JSON text: parsers keep the last one, the corrupt one.
        const name = this.pick(Object.keys(shape.kinds));
        const [fieldValue, what] = this.invalidValue(shape.kinds[name]!);
        const text = this.serialize(body);
        const payload = `${text.slice(0, -1)}${text.length > 2 ? ',' : ''}${JSON.stringify(name)}:${this.serialize(fieldValue)}}`;
        return {
          payload,
          contentType: json,
          field: rounds === 1 ? name : undefined,
          what: `duplicate ${name}: ${what}`,
        };
      } else {
        const [name, what] = this.corruptField(shape, body);
        field = name;
        whats.push(what);
      }
    }
    return {
      payload: this.serialize(body),
      contentType: json,
      field: rounds === 1 ? field : undefined,
      what: whats.join('; '),
    };
  }
}
