// The runnable examples in js/examples (js/README.md walks through them),
// each run against the real sync server and checked against the output its
// "// Output:" comment shows, as Go checks its examples.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, symlink, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';

import { buildServer, startServer } from './server.mjs';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const examples = join(here, '..', 'examples');
let server;
let authServer; // checks signed tokens (examples/signedtokens.mjs)
let authDir;
const jwtSecret = 'an example secret of at least thirty-two bytes';
let cleanupBin = async () => {};

before(async () => {
  const built = await buildServer();
  cleanupBin = built.cleanup;
  server = await startServer(built.bin);
  authDir = await mkdtemp(join(tmpdir(), 'hilodb-example-jwt-'));
  await writeFile(join(authDir, 'hs256'), jwtSecret);
  authServer = await startServer(built.bin, ['-jwt-hs256-file', join(authDir, 'hs256')]);
  // The examples import 'hilodb' as users do: the package itself.
  await mkdir(join(examples, 'node_modules'), { recursive: true });
  await rm(join(examples, 'node_modules', 'hilodb'), { force: true });
  await symlink(join(here, '..'), join(examples, 'node_modules', 'hilodb'));
});

after(async () => {
  await rm(join(examples, 'node_modules'), { recursive: true, force: true });
  await server?.stop();
  await authServer?.stop();
  await rm(authDir, { recursive: true, force: true });
  await cleanupBin();
});

for (const name of (await readdir(examples)).filter((f) => f.endsWith('.mjs')).sort()) {
  test(`example ${name}`, async () => {
    const src = await readFile(join(examples, name), 'utf8');
    const want = src
      .slice(src.indexOf('// Output:\n') + '// Output:\n'.length)
      .trimEnd()
      .split('\n')
      .map((l) => l.replace(/^\/\/ ?/, ''))
      .join('\n');
    assert.ok(src.includes('// Output:\n'), `${name} has no // Output: block`);
    const { stdout } = await run(process.execPath, [join(examples, name)], {
      env: { ...process.env, HILODB_URL: server.wsURL, HILODB_AUTH_URL: authServer.wsURL, HILODB_JWT_SECRET: jwtSecret },
      timeout: 60000,
    });
    assert.equal(stdout.trimEnd(), want);
  });
}

// docs/auth.md shows examples/signedtokens.mjs as its worked
// example: the code there is the code run here.
test('docs/auth.md shows examples/signedtokens.mjs', async () => {
  const doc = await readFile(join(here, '..', '..', 'docs', 'auth.md'), 'utf8');
  const src = await readFile(join(examples, 'signedtokens.mjs'), 'utf8');
  const code = src.slice(src.indexOf('import '), src.indexOf('// Output:')).trimEnd();
  assert.ok(doc.includes(code), 'docs/auth.md does not show examples/signedtokens.mjs as it is');
});
