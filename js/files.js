// A persisted store's files in Node: the Node entry (node.js) hands
// filePersistence to persist.js, so that the browser build never imports
// a module of Node's.

import { createHash, randomBytes } from 'node:crypto';
import * as fsSync from 'node:fs';
import * as fs from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

import { hiloError } from './errors.js';
import { lockedError } from './persist.js';

const snapshotFormat = 'hilodb-snapshot/1';

// filePersistence keeps a store in Node in the file at path (a JSON header
// line, then the snapshot), the log of writes since in path.log, its node tag
// in path.node, its HiLo ranges in path.ranges and a lock in path.lock. An
// append is written (and with flush fdatasynced) before it resolves; every
// other file is replaced by a temporary file that is synced and renamed over
// the old one.
export async function filePersistence(path, flush) {
  const file = resolve(path);
  const logFile = `${file}.log`;
  const nodeFile = `${file}.node`;
  const rangesFile = `${file}.ranges`;
  const lockFile = `${file}.lock`;
  const lockToken = await takeFileLock(fs, lockFile, path);

  let seq = 0;
  const syncDir = async (target) => {
    const dir = await fs.open(dirname(target), 'r');
    try {
      await dir.sync();
    } catch {
      // some file systems cannot sync a directory
    } finally {
      await dir.close();
    }
  };
  const writeDurable = async (target, data) => {
    const tmp = `${target}.${process.pid}.${++seq}.tmp`;
    const fh = await fs.open(tmp, 'w');
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, target);
    await syncDir(target);
  };
  const serial = () => {
    let tail = Promise.resolve();
    return (fn) => {
      const p = tail.then(fn);
      tail = p.catch(() => {});
      return p;
    };
  };
  const logOps = serial();
  const journal = serial();
  const nodes = serial();
  const readIfThere = (f, enc) =>
    fs.readFile(f, enc).catch((err) => {
      if (err.code === 'ENOENT') return null;
      throw err;
    });
  let ranges = {};
  let node = null;
  let log = null; // the log's file handle, opened for appending
  let closed = false;
  return {
    async load() {
      let snapshot = null;
      const buf = await readIfThere(file);
      if (buf) {
        const nl = buf.indexOf(10);
        let head;
        try {
          head = JSON.parse(buf.subarray(0, nl).toString('utf8'));
        } catch {
          head = null;
        }
        if (nl < 0 || !head || head.format !== snapshotFormat) {
          throw hiloError('bad_request', 400, `openStore: persist: ${file} is not a hilodb snapshot`);
        }
        node = typeof head.node === 'string' && head.node ? head.node : null;
        snapshot = buf.subarray(nl + 1);
      }
      node = (await readIfThere(nodeFile, 'utf8')) || node;
      const text = await readIfThere(rangesFile, 'utf8');
      if (text) ranges = JSON.parse(text);
      const logBytes = await readIfThere(logFile);
      if (!logBytes) await syncDir(logFile); // the log is about to be created
      log = await fs.open(logFile, 'a');
      return { snapshot, log: logBytes, node, ranges: { ...ranges } };
    },
    append: (bytes) =>
      logOps(async () => {
        await log.write(bytes);
        if (flush) await log.datasync();
      }),
    // A write(2) (and fdatasync) before it returns: Go calls it only while
    // no other log operation is in flight.
    canAppendNow: () => log !== null,
    appendNow: (bytes) => {
      if (closed || log === null) return false;
      for (let done = 0; done < bytes.length; ) done += fsSync.writeSync(log.fd, bytes, done);
      if (flush) fsSync.fdatasyncSync(log.fd);
      return true;
    },
    flush: () => (flush ? Promise.resolve() : logOps(() => log.datasync())),
    compact: (bytes) =>
      logOps(async () => {
        await writeDurable(file, Buffer.concat([Buffer.from(`${JSON.stringify({ format: snapshotFormat, node })}\n`), bytes]));
        await log.truncate(0);
        await log.sync();
      }),
    saveNode: (tag) =>
      nodes(() => {
        node = tag;
        return writeDurable(nodeFile, tag);
      }),
    saveRange: (tag, text) =>
      journal(() => {
        ranges = { ...ranges, [tag]: text };
        return writeDurable(rangesFile, JSON.stringify(ranges));
      }),
    close: async () => {
      if (closed) return;
      closed = true;
      await Promise.all([logOps(() => {}), journal(() => {}), nodes(() => {})]);
      await log?.close();
      await releaseFileLock(fs, lockFile, lockToken);
    },
    watchPage: () => () => {},
  };
}

// takeFileLock takes lockFile for this process. The lock is made whole
// before it has its name: a temporary file holding "<pid> <nonce>" is
// linked to lockFile, which link(2) does atomically and only when the name
// is free, so no other process ever reads a lock without its holder's id.
//
// A lock whose process is provably gone (no such pid) is taken over
// without a race: the taker first links a claim file whose name is made
// from the stale lock's inode and text, which only one process can do; it
// then reads lockFile again and removes it only if it is still that stale
// lock. Nothing else removes a lock whose holder is gone, so it cannot
// change between that read and the removal. A claim left by a taker that
// died is itself stale and is taken over the same way.
async function takeFileLock(fs, lockFile, name) {
  const mine = `${process.pid} ${randomBytes(16).toString('hex')}`;
  for (let attempt = 0; attempt < 8; attempt++) {
    if (await linkWith(fs, lockFile, mine)) return mine;
    const held = await readLock(fs, lockFile);
    if (held === null) continue; // released meanwhile: try again
    if (held.pid === process.pid) throw lockedError(name, 'in this process');
    if (!held.stale) throw lockedError(name, held.pid > 0 ? `process ${held.pid}` : 'another process');
    await takeOver(fs, lockFile, held, 0);
  }
  throw lockedError(name, 'another process');
}

// releaseFileLock removes lockFile if it is still the one token took.
async function releaseFileLock(fs, lockFile, token) {
  const held = await readLock(fs, lockFile);
  if (held !== null && held.text === token) await fs.rm(lockFile, { force: true });
}

// linkWith gives name a new file holding text, atomically, and reports
// whether it did (false when the name is taken).
async function linkWith(fs, name, text) {
  const tmp = `${name}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await fs.writeFile(tmp, text, { flag: 'wx' });
    await fs.link(tmp, name);
    return true;
  } catch (err) {
    if (err.code === 'EEXIST') return false;
    throw hiloError('unavailable', 503, `openStore: persist: lock ${name}: ${err.message}`);
  } finally {
    await fs.rm(tmp, { force: true });
  }
}

// readLock reads a lock file: its text, inode, holder's pid and whether it
// is stale (its holder is provably gone). It returns null when there is
// none. A lock without a pid (left by an earlier version of this package,
// which wrote the pid after creating the file) counts as stale once it is
// 5 s old.
async function readLock(fs, file) {
  let st;
  let text;
  let fh;
  try {
    // One handle for both: the inode and the text are of the same file.
    fh = await fs.open(file, 'r');
    st = await fh.stat();
    text = await fh.readFile('utf8');
  } catch (err) {
    if (err.code === 'ENOENT') return null;
    throw hiloError('unavailable', 503, `openStore: persist: lock ${file}: ${err.message}`);
  } finally {
    await fh?.close();
  }
  const pid = /^[1-9][0-9]*(?: |$)/.test(text) ? Number.parseInt(text, 10) : 0;
  const stale = pid > 0 ? pid !== process.pid && !processAlive(pid) : Date.now() - st.mtimeMs > 5000;
  return { text, ino: st.ino, pid, stale };
}

// takeOver removes the stale lock held (read from lockFile) unless another
// process is taking it over or has done so already; depth counts claims of
// claims.
async function takeOver(fs, lockFile, held, depth) {
  const claim = `${lockFile}.claim-${createHash('sha256').update(`${held.ino}\n${held.text}`).digest('hex').slice(0, 32)}`;
  const token = `${process.pid} claim`;
  if (!(await linkWith(fs, claim, token))) {
    const other = await readLock(fs, claim);
    if (other === null || !other.stale || depth >= 2) return; // another taker is at work: read the lock again
    await takeOver(fs, claim, other, depth + 1);
    return;
  }
  try {
    const now = await readLock(fs, lockFile);
    if (now !== null && now.ino === held.ino && now.text === held.text) await fs.rm(lockFile, { force: true });
  } finally {
    await fs.rm(claim, { force: true });
  }
}

function processAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}
