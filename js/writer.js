// The dedicated worker that writes a persisted store's log to the origin
// private file system (OPFS). Only dedicated workers may hold a
// FileSystemSyncAccessHandle, whose write reaches the operating system
// before it returns (so a killed tab or browser cannot take it back) at a
// fraction of an IndexedDB commit's cost. A persisted store opened in a
// page with shared: false starts one (opfs.js); a store in a dedicated
// worker holds its files itself.
//
// Requests, on the worker: {rid, op, file, ...}; replies {rid, ok: true, ...}
// or {rid, ok: false, name, message}.
//
//	open(file)                  → {size}: opens (creating) file for this writer alone
//	read(file)                  → {bytes}: the whole file (its buffer transferred)
//	write(file, at, bytes, flush) → {size}: bytes written at offset at (flushed to the disk with flush)
//	truncate(file, size)        → {size}: cut to size, flushed to the disk
//	replace(file, bytes)        → {size}: the file made bytes, flushed to the disk
//	flush(file)                 → {}: everything written so far on the disk
//	close(file)                 → {}

import { writeAll } from './opfs.js';

const handles = new Map(); // file → FileSystemSyncAccessHandle

async function open(file) {
  let h = handles.get(file);
  if (!h) {
    const root = await navigator.storage.getDirectory();
    const fh = await root.getFileHandle(file, { create: true });
    h = await fh.createSyncAccessHandle();
    handles.set(file, h);
  }
  return h;
}

function held(file) {
  const h = handles.get(file);
  if (!h) throw Object.assign(new Error(`${file} is not open in this writer`), { name: 'NotOpen' });
  return h;
}

async function serve(msg) {
  switch (msg.op) {
    case 'open':
      return { size: (await open(msg.file)).getSize() };
    case 'read': {
      const h = held(msg.file);
      const bytes = new Uint8Array(h.getSize());
      h.read(bytes, { at: 0 });
      return { bytes };
    }
    case 'write': {
      const h = held(msg.file);
      writeAll(h, msg.file, msg.at, msg.bytes);
      if (msg.flush) h.flush();
      return { size: msg.at + msg.bytes.length };
    }
    case 'replace': {
      const h = held(msg.file);
      h.truncate(0);
      writeAll(h, msg.file, 0, msg.bytes);
      h.flush();
      return { size: msg.bytes.length };
    }
    case 'truncate': {
      const h = held(msg.file);
      h.truncate(msg.size);
      h.flush();
      return { size: msg.size };
    }
    case 'flush':
      held(msg.file).flush();
      return {};
    case 'close': {
      const h = handles.get(msg.file);
      handles.delete(msg.file);
      h?.close();
      return {};
    }
    default:
      throw new Error(`unknown writer op ${msg.op}`);
  }
}

function listen(port) {
  port.onmessage = async (e) => {
    const msg = e.data;
    try {
      const reply = await serve(msg);
      port.postMessage({ rid: msg.rid, ok: true, ...reply }, reply.bytes ? [reply.bytes.buffer] : []);
    } catch (err) {
      port.postMessage({ rid: msg.rid, ok: false, name: err?.name ?? 'Error', message: String(err?.message ?? err) });
    }
  };
}

listen(globalThis);
