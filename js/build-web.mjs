// build-web.mjs OUTDIR lays out the browser build in a web root (build-web.sh
// runs it after build.sh, before the compressed copies are written): one
// bundled module per place the code runs, so that a page and each worker
// fetch one file rather than the package's twenty modules one import level
// after another, and every file but the page's entry under a name that
// carries its content's hash, which hilodb-server -static serves as
// immutable (a reload asks for none of them again):
//
//	OUTDIR/index.js                    the page's entry (openStore), not renamed: apps import it
//	OUTDIR/shared-<hash>.js            the shared worker and each tab's host worker (shared.js, host.js, the store)
//	OUTDIR/writer-<hash>.js            the OPFS writer worker (writer.js)
//	OUTDIR/dist/hilodb-<hash>.wasm     the Go program (wasm_exec.js is bundled where it is needed)
//	OUTDIR/shell.js, OUTDIR/sw.js      registerShell, which keeps the files above, and the service worker
//
// The bundles keep the package's `new URL('./x', import.meta.url)`
// references, each pointing at its renamed file.
import { createHash } from 'node:crypto';
import { copyFile, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));

if (process.argv.length !== 3 || process.argv[2] === '') {
  console.error('usage: node build-web.mjs OUTDIR');
  process.exit(2);
}
const out = process.argv[2];
await mkdir(join(out, 'dist'), { recursive: true });
// An earlier build's renamed files go: they are never named again.
for (const [dir, re] of [['.', /^(shared|writer)-[0-9a-f]{12}\.js(\.br|\.gz)?$/], ['dist', /^hilodb-[0-9a-f]{12}\.wasm(\.br|\.gz)?$/]]) {
  for (const f of await readdir(join(out, dir))) if (re.test(f)) await rm(join(out, dir, f));
}

// renamed maps a file the package names relative to itself ('./shared.js')
// to its name in the web root.
const renamed = new Map();

// hashed is name with hex digits of content's SHA-256 before its extension
// (hilodb-server's hashedName: 8 or more hex digits, one a digit).
function hashed(name, content) {
  const sum = createHash('sha256').update(content).digest('hex');
  let h = sum.slice(0, 12);
  if (!/[0-9]/.test(h)) h = sum.slice(0, 11) + '0';
  const dot = name.lastIndexOf('.');
  return `${name.slice(0, dot)}-${h}${name.slice(dot)}`;
}

// newURLs points each `new URL('./x', import.meta.url)` of the package's
// modules at x's name in the web root.
const newURLs = {
  name: 'hilodb-renamed',
  setup(b) {
    b.onLoad({ filter: /\.js$/ }, async (args) => {
      if (relative(here, dirname(args.path)) !== '') return undefined;
      let text = await readFile(args.path, 'utf8');
      text = text.replace(/new URL\((['"])(\.\/[^'"]+)\1, import\.meta\.url\)/g, (all, q, ref) => {
        // A bundle that names its own entry (the store's worker, through
        // tabs.js) names itself.
        if (ref === `./${b.initialOptions.entryPoints[0].slice(here.length + 1)}`) return 'new URL(import.meta.url)';
        return renamed.has(ref) ? `new URL(${q}./${renamed.get(ref)}${q}, import.meta.url)` : all;
      });
      return { contents: text, loader: 'js' };
    });
  },
};

// bundle bundles entry (a module of the package) and returns its text.
async function bundle(entry, define = {}) {
  const r = await build({
    entryPoints: [join(here, entry)],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    minifySyntax: true,
    legalComments: 'none',
    define,
    plugins: [newURLs],
    logLevel: 'warning',
  });
  return r.outputFiles[0].contents;
}

// emit writes a bundle of entry under its hashed name and records it.
async function emit(entry) {
  const text = await bundle(entry);
  const name = hashed(entry, text);
  await writeFile(join(out, name), text);
  renamed.set(`./${entry}`, name);
  return name;
}

const wasm = await readFile(join(here, 'dist', 'hilodb.wasm'));
const wasmName = `dist/${hashed('hilodb.wasm', wasm)}`;
await copyFile(join(here, 'dist', 'hilodb.wasm'), join(out, wasmName));
renamed.set('./dist/hilodb.wasm', wasmName);

// In the order they name each other: the store's worker starts the writer,
// the page starts the store's worker.
const files = [await emit('writer.js'), await emit('shared.js')];
await writeFile(join(out, 'index.js'), await bundle('index.js'));
files.unshift('index.js');
files.push(wasmName);
// registerShell keeps these at once (shell.js, hilodbWebFiles).
await writeFile(join(out, 'shell.js'), await bundle('shell.js', { hilodbWebFiles: JSON.stringify(files) }));
await copyFile(join(here, 'sw.js'), join(out, 'sw.js'));
console.log(`bundled ${['index.js', 'shell.js', ...files.slice(1)].map((f) => basename(f)).join(', ')}`);
