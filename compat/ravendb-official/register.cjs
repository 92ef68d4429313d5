// The harness's loader for RavenDB's official client tests (README.md):
// the official test files are TypeScript that import
// the client's sources ("../../src", "../../src/Utility/DateUtil") and the
// upstream test driver ("../Utils/TestUtil"). Each .ts file is transpiled
// as it is loaded, unchanged; "src" resolves to the pinned ravendb package
// (its CommonJS build), and TestUtil to TestUtil.cjs beside this file, which points
// the stores at a hilodb server instead of starting a RavenDB one.
'use strict';
const Module = require('node:module');
const path = require('node:path');
const fs = require('node:fs');
const ts = require('typescript');

const ravendb = path.dirname(require.resolve('ravendb/package.json'));
const cjs = path.join(ravendb, 'dist', 'commonjs');

const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, parent, ...rest) {
  const src = /^(?:\.\.\/)+src(\/.*)?$/.exec(request);
  if (src) {
    const sub = src[1] || '/index';
    for (const cand of [path.join(cjs, sub + '.js'), path.join(cjs, sub, 'index.js')]) {
      if (fs.existsSync(cand)) return cand;
    }
  }
  if (/(^|\/)Utils\/TestUtil$/.test(request)) {
    return path.join(__dirname, 'TestUtil.cjs');
  }
  try {
    return resolve.call(this, request, parent, ...rest);
  } catch (err) {
    // The official files live outside this repository: their bare imports
    // (moment, assert) come from compat/node_modules.
    if (!request.startsWith('.') && !path.isAbsolute(request)) {
      return require.resolve(request, { paths: [path.join(__dirname, '..')] });
    }
    throw err;
  }
};

require.extensions['.ts'] = function (module, filename) {
  const source = fs.readFileSync(filename, 'utf8');
  const out = ts.transpileModule(source, {
    fileName: filename,
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      experimentalDecorators: true,
      useDefineForClassFields: false,
    },
  });
  module._compile(out.outputText, filename);
};
