// RavenDB's official Node client (the pinned ravendb package) with a
// client certificate, against the real hilodb server over TLS: the way a
// secured RavenDB server is reached, `new DocumentStore(urls, database,
// {certificate, type: 'pem', ca})` (the package's IAuthOptions). The server
// lists the certificate's thumbprint in -client-certs with a role per
// database; no proxy and no CA for clients are involved.

import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';

import { DocumentStore } from 'ravendb';

import { buildServer, freePort } from '../js/test/server.mjs';

const run = promisify(execFile);
let dir;
let child;
let base;
let cleanupBin = async () => {};
const pems = {};

// selfSigned makes a self-signed certificate and key named name. The
// official client reads a PEM client key as "RSA PRIVATE KEY" (PKCS#1):
// clients get one, the server an EC key.
async function selfSigned(name, cn, san) {
  const key = join(dir, `${name}.key`);
  if (san) await run('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', key]);
  else await run('openssl', ['genrsa', '-traditional', '-out', key, '2048']);
  const args = ['req', '-x509', '-key', key, '-days', '2', '-subj', `/CN=${cn}`, '-out', join(dir, `${name}.crt`)];
  if (san) args.push('-addext', `subjectAltName=${san}`);
  await run('openssl', args);
  pems[name] = { cert: await readFile(join(dir, `${name}.crt`), 'utf8'), key: await readFile(key, 'utf8') };
}

// thumbprint is a certificate's SHA-1 thumbprint as RavenDB shows it.
function thumbprint(pem) {
  return createHash('sha1').update(new X509Certificate(pem).raw).digest('hex').toUpperCase();
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hilodb-certs-'));
  await selfSigned('server', '127.0.0.1', 'IP:127.0.0.1');
  await selfSigned('writer', 'orders-app');
  await selfSigned('reader', 'reports');
  await selfSigned('stranger', 'nobody');
  await writeFile(join(dir, 'clients.json'), JSON.stringify({
    [thumbprint(pems.writer.cert)]: { shop: 'write' },
    // As RavenDB shows it elsewhere: lower case with colons is taken too.
    [thumbprint(pems.reader.cert).toLowerCase().match(/../g).join(':')]: { shop: 'read' },
  }));
  const built = await buildServer();
  cleanupBin = built.cleanup;
  const port = await freePort();
  base = `https://127.0.0.1:${port}`;
  // A static token, which no test sends: requests are judged by
  // certificate or refused.
  child = spawn(built.bin, ['-addr', `127.0.0.1:${port}`, '-data', join(dir, 'data'), '-tls-cert', join(dir, 'server.crt'),
    '-tls-key', join(dir, 'server.key'), '-client-certs', join(dir, 'clients.json'), '-tokens', '*=unused-static-token'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (b) => (log += b));
  child.stderr.on('data', (b) => (log += b));
  for (let i = 0; !log.includes('serving'); i++) {
    if (i > 300 || child.exitCode !== null) throw new Error(`server did not start:\n${log}`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
});

after(async () => {
  child?.kill('SIGTERM');
  await rm(dir, { recursive: true, force: true });
  await cleanupBin();
});

function storeWith(name, database = 'shop') {
  const store = new DocumentStore([base], database, { certificate: pems[name].cert + pems[name].key, type: 'pem', ca: pems.server.cert });
  store.conventions.disableTopologyUpdates = true;
  store.initialize();
  return store;
}

test('a known client certificate stores and loads; its role holds', async () => {
  const writer = storeWith('writer');
  try {
    const session = writer.openSession();
    const order = { item: 'tea', qty: 2, '@metadata': { '@collection': 'Orders' } };
    await session.store(order, 'orders/1-A');
    await session.saveChanges();
    const loaded = await writer.openSession().load('orders/1-A');
    assert.equal(loaded.item, 'tea');
  } finally {
    writer.dispose();
  }

  // The reader loads and cannot store.
  const reader = storeWith('reader');
  try {
    assert.equal((await reader.openSession().load('orders/1-A')).qty, 2);
    const s = reader.openSession();
    await s.store({ item: 'coffee' }, 'orders/2-A');
    await assert.rejects(s.saveChanges(), /forbidden|403/i);
  } finally {
    reader.dispose();
  }

  // Another database, or an unknown certificate: refused, nothing stored.
  for (const [name, db] of [['writer', 'crm'], ['stranger', 'shop']]) {
    const store = storeWith(name, db);
    try {
      const s = store.openSession();
      await s.store({ item: 'x' }, 'orders/3-A');
      await assert.rejects(s.saveChanges(), /unauthorized|401|authoriz/i, `${name} in ${db}`);
    } finally {
      store.dispose();
    }
  }
  const check = storeWith('writer');
  try {
    const s = check.openSession();
    assert.equal(await s.load('orders/2-A'), null);
    assert.equal(await s.load('orders/3-A'), null);
  } finally {
    check.dispose();
  }
});
