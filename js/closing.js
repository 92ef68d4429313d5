// What close() does before it lets go of a store: wait, within a bound, for
// the writes the server has not acknowledged yet, and tell how many are
// left, so that no write is dropped without a word.

/** closeTimeout is how long close() waits for pending writes by default (ms). */
export const closeTimeout = 5000;

/**
 * settlePending resolves to the number of local writes the server has not
 * acknowledged once store (pending(), info()) has none left, the store is
 * offline (not connected, nor on its way: a store opened before connects
 * after openStore resolved), or timeout ms have passed. A store that does not sync live
 * (sync: false) is not waited for: nothing would push its writes.
 */
export async function settlePending(store, live, timeout) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const n = await store.pending();
    if (n === 0 || !live || Date.now() >= deadline) return n;
    const { connected, connecting } = await store.info();
    if (!connected && !connecting) return n;
    await new Promise((ok) => setTimeout(ok, Math.min(25, Math.max(0, deadline - Date.now()))));
  }
}

/** closeOptions checks close()'s options and returns its timeout in ms. */
export function closeOptions(options, hiloError) {
  if (options === undefined || options === null) return closeTimeout;
  if (typeof options !== 'object') throw hiloError('bad_request', 400, 'close: options must be an object');
  for (const k of Object.keys(options)) {
    if (k !== 'timeout') throw hiloError('bad_request', 400, `close: unknown option ${JSON.stringify(k)}; want timeout`);
  }
  const { timeout = closeTimeout } = options;
  if (typeof timeout !== 'number' || !(timeout >= 0)) throw hiloError('bad_request', 400, 'close: timeout must be a number of milliseconds, 0 or more');
  return timeout;
}
