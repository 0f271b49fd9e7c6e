/**
 * Parses a YAML file as every tool that reads our files would, and refuses what any of them refuses.
 *
 * Why two parsers: the npm `yaml` package implements YAML 1.2 to the letter, and accepts text that
 * the libyaml family (go-yaml behind kubectl and kustomize, PyYAML behind most Python tooling)
 * rejects, such as a `?` inside a plain scalar of a flow mapping. yaml-js is a port of PyYAML's
 * scanner and parser. A file passes when `yaml` finds no error or warning (duplicate keys
 * included), yaml-js parses it, and both read the same values (so no YAML 1.1 reading such as
 * `on: yes` becoming `true: true` can differ between tools).
 */
import { isDeepStrictEqual } from 'node:util';
import { parseAllDocuments } from 'yaml';
import yamlJs from 'yaml-js';

/** Every document of `text`, or an Error naming `name` and what each parser said. */
export function parseStrictYaml(text: string, name: string): unknown[] {
  // Merge keys (`<<: *defaults`) are not YAML 1.2, but go-yaml, compose and PyYAML all apply them.
  const documents = parseAllDocuments(text, {
    version: '1.2',
    uniqueKeys: true,
    strict: true,
    merge: true,
  });
  const values = documents.map((document, index) => {
    const problems = [...document.errors, ...document.warnings];
    if (problems.length > 0) {
      throw new Error(`${name} document ${index}: ${problems.map((p) => p.message).join('; ')}`);
    }
    return document.toJS();
  });
  let likePyYaml: unknown[];
  try {
    likePyYaml = yamlJs.load_all(text);
  } catch (error) {
    throw new Error(`${name}: rejected by a libyaml-family parser (as kubectl would): ${String(error)}`);
  }
  if (!isDeepStrictEqual(withoutEmptyDocuments(values), withoutEmptyDocuments(likePyYaml))) {
    throw new Error(
      `${name}: YAML 1.2 and libyaml-family parsers read different values; quote the ambiguous scalars`,
    );
  }
  return values;
}

function withoutEmptyDocuments(documents: unknown[]): unknown[] {
  return documents.filter((document) => document !== null && document !== undefined);
}
