// yaml-js ships no types (and, being CommonJS assigned at run time, no named exports); the tests use
// one function of it.
declare module 'yaml-js' {
  const yamlJs: {
    /** Every document of a YAML stream, parsed as PyYAML parses it; throws on a syntax error. */
    load_all(stream: string): unknown[];
  };
  export default yamlJs;
}
