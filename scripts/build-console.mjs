// Bundles the web console (src/console/app/) into <out>/console/: one JavaScript and one CSS file
// under assets/ with the page that loads them, and Swagger UI's files from swagger-ui-dist under
// docs/ for GET /docs. Everything the browser loads comes from the package: the console's pages are
// opened on machines without the internet, so nothing points at a CDN.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const APP = 'src/console/app';
/** Swagger UI's files the /docs page loads (the bundle carries its own presets). */
const SWAGGER_FILES = ['swagger-ui-bundle.js', 'swagger-ui.css', 'favicon-32x32.png'];

/** Builds the console into `<out>/console` and returns the gzipped size of what the console loads. */
export async function buildConsole(out) {
  const target = join(out, 'console');
  mkdirSync(join(target, 'assets'), { recursive: true });
  const result = await build({
    entryPoints: { app: join(APP, 'main.tsx') },
    outdir: join(target, 'assets'),
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['es2022', 'chrome110', 'firefox110', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    tsconfig: join(APP, 'tsconfig.json'),
    sourcemap: 'linked',
    legalComments: 'linked',
    metafile: true,
    logLevel: 'warning',
  });
  copyFileSync(join(APP, 'index.html'), join(target, 'index.html'));
  const docs = join(target, 'docs');
  mkdirSync(docs, { recursive: true });
  const swaggerDir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  for (const file of SWAGGER_FILES) copyFileSync(join(swaggerDir, file), join(docs, file));
  copyFileSync(join(APP, 'docs', 'index.html'), join(docs, 'index.html'));
  copyFileSync(join(APP, 'docs', 'docs.js'), join(docs, 'docs.js'));
  const shipped = Object.keys(result.metafile.outputs).filter((f) => /\.(js|css)$/.test(f));
  const gzipped = shipped.reduce((sum, file) => sum + gzipSync(readFileSync(file)).length, 0);
  writeFileSync(
    join(target, 'size.json'),
    `${JSON.stringify({ gzipped_bytes: gzipped, files: shipped.map((f) => f.slice(target.length + 1)) })}\n`,
  );
  return gzipped;
}
