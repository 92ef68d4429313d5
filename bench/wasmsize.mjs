// make wasm-size: what the browser build weighs, and what each Go package
// costs in it. Usage:
//
//   node bench/wasmsize.mjs NAMED.wasm DEPS.txt [STRIPPED.wasm] [ROWS]
//
// NAMED.wasm is the build with its name section (go build without -s),
// DEPS.txt the build's packages (go list -deps), STRIPPED.wasm the build
// as shipped (js/build.sh: -ldflags=-s -w). It prints the shipped file's
// size raw and brotli-compressed (quality 9, as internal/precompress
// writes it), its sections, and per Go package the bytes of its functions'
// code, those bytes brotli-compressed alone (an upper bound of what
// dropping the package saves: compressed together, code shares a
// dictionary) and how many functions. The data section (read-only data,
// type descriptors, the function tables Go keeps for its stacks) is not
// split by package.

import { readFileSync } from 'node:fs';
import { brotliCompressSync, constants } from 'node:zlib';

const [named, deps, stripped, rowsArg] = process.argv.slice(2);
if (!named || !deps) {
  console.error('usage: node bench/wasmsize.mjs NAMED.wasm DEPS.txt [STRIPPED.wasm] [ROWS]');
  process.exit(2);
}
const br = (buf) => brotliCompressSync(buf, { params: { [constants.BROTLI_PARAM_QUALITY]: 9, [constants.BROTLI_PARAM_SIZE_HINT]: buf.length } }).length;
const kib = (n) => `${(n / 1024).toFixed(0)} KiB`;

// Go names a function after its package path with "/" written "_": the
// longest path that prefixes a name, then ".", is its package.
const pkgs = readFileSync(deps, 'utf8').trim().split('\n').map((p) => [p.replaceAll('/', '_'), p]).sort((x, y) => y[0].length - x[0].length);

function parse(b) {
  let p = 8;
  const uleb = () => {
    let r = 0;
    let s = 0;
    let x;
    do {
      x = b[p++];
      r += (x & 0x7f) * 2 ** s;
      s += 7;
    } while (x & 0x80);
    return r;
  };
  const out = { imports: 0, bodies: [], names: new Map(), sections: [] };
  const kinds = { 1: 'type', 2: 'import', 3: 'function', 6: 'global', 7: 'export', 9: 'element', 10: 'code', 11: 'data' };
  while (p < b.length) {
    const id = b[p++];
    const size = uleb();
    const end = p + size;
    let label = kinds[id] ?? `section ${id}`;
    if (id === 2) {
      for (let i = 0, n = uleb(); i < n; i++) {
        p += uleb();
        p += uleb();
        const kind = b[p++];
        if (kind === 0) {
          uleb();
          out.imports++;
        } else if (kind === 1) {
          p++;
          if (b[p++] & 1) uleb();
          uleb();
        } else if (kind === 2) {
          if (b[p++] & 1) uleb();
          uleb();
        } else p += 2;
      }
    } else if (id === 10) {
      for (let i = 0, n = uleb(); i < n; i++) {
        const len = uleb();
        out.bodies.push([p, len]);
        p += len;
      }
    } else if (id === 0) {
      const len = uleb();
      label = `custom ${b.subarray(p, p + len)}`;
      p += len;
      if (label === 'custom name') {
        while (p < end) {
          const sub = b[p++];
          const subEnd = uleb() + p;
          if (sub === 1) {
            for (let i = 0, n = uleb(); i < n; i++) {
              const idx = uleb();
              const l = uleb();
              out.names.set(idx, b.subarray(p, p + l).toString());
              p += l;
            }
          }
          p = subEnd;
        }
      }
    }
    out.sections.push([label, size]);
    p = end;
  }
  return out;
}

if (stripped) {
  const s = readFileSync(stripped);
  const w = parse(s);
  console.log(`${stripped}: ${s.length} bytes (${kib(s.length)}), brotli ${br(s)} bytes (${kib(br(s))})`);
  console.log(`sections: ${w.sections.filter(([, n]) => n >= 1024).map(([l, n]) => `${l} ${kib(n)}`).join(', ')}`);
}
const b = readFileSync(named);
const w = parse(b);
const by = new Map();
w.bodies.forEach(([off, len], i) => {
  const name = w.names.get(i + w.imports) ?? '?';
  const hit = pkgs.find(([m]) => name.startsWith(`${m}.`));
  const pkg = hit ? hit[1] : name.split('.')[0];
  const e = by.get(pkg) ?? { bytes: 0, n: 0, parts: [] };
  e.bytes += len;
  e.n++;
  e.parts.push(b.subarray(off, off + len));
  by.set(pkg, e);
});
const total = w.bodies.reduce((a, [, l]) => a + l, 0);
console.log(`code: ${total} bytes in ${w.bodies.length} functions\n`);
console.log('| package | code bytes | brotli alone | functions |');
console.log('|---|---|---|---|');
for (const [pkg, e] of [...by].sort((x, y) => y[1].bytes - x[1].bytes).slice(0, Number(rowsArg || 30))) {
  console.log(`| ${pkg} | ${e.bytes.toLocaleString('en')} | ${br(Buffer.concat(e.parts)).toLocaleString('en')} | ${e.n} |`);
}
