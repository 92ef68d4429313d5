// A shared store's tokens come from the pages that use it: a token
// function cannot go to the worker that runs the store (host.js), so the
// host asks a tab ({t: 'token', rid} on the tab's port, answered with
// {t: 'token-reply', rid, ok, value}), whenever the store needs a token:
// at start, before the one in use expires, after the server refused one.

/** askWait is how long one tab is given to answer before the next is asked. */
const askWait = 10000;

/** TokenAsks are a host's questions to tabs for a token. */
export class TokenAsks {
  #next = 0;
  #waiting = new Map(); // rid → {resolve, reject, timer}

  /**
   * ask asks the tabs behind ports in turn until one gives a token; it
   * rejects with the last tab's reason when none does.
   */
  async ask(ports) {
    let last;
    for (const port of new Set(ports)) {
      try {
        return await this.#askOne(port);
      } catch (err) {
        last = err;
      }
    }
    throw last ?? codedError('unauthorized', 401, 'no tab is left to give the store a token');
  }

  #askOne(port) {
    return new Promise((resolve, reject) => {
      const rid = ++this.#next;
      const timer = setTimeout(() => {
        this.#waiting.delete(rid);
        reject(codedError('unauthorized', 401, 'the tab asked for a token did not answer'));
      }, askWait);
      this.#waiting.set(rid, { resolve, reject, timer });
      try {
        port.postMessage({ t: 'token', rid });
      } catch (err) {
        clearTimeout(timer);
        this.#waiting.delete(rid);
        reject(err);
      }
    });
  }

  /** answer settles the question msg ({t: 'token-reply'}) answers. */
  answer(msg) {
    const w = this.#waiting.get(msg?.rid);
    if (!w) return;
    this.#waiting.delete(msg.rid);
    clearTimeout(w.timer);
    if (msg.ok && typeof msg.value === 'string') w.resolve(msg.value);
    else w.reject(codedError(msg.value?.code ?? 'unauthorized', msg.value?.num ?? 401, msg.value?.message ?? 'the tab gave no token'));
  }
}

function codedError(code, num, message) {
  return Object.assign(new Error(message), { code, num });
}
