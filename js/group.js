// Puts made together and sent as one putMany, by a store of its own
// (index.js) and by a store shared by the tabs (tabs.js).

import { hiloError } from './errors.js';

/**
 * maxPutsTogether bounds the puts of one group: a few megabytes of small
 * documents, well under putMany's 100,000.
 */
export const maxPutsTogether = 10000;

/**
 * PutGroup is puts into one collection waiting to go as one putMany: each
 * put's document as JSON text, and the Promise it got.
 */
export class PutGroup {
  #texts = [];
  #waiters = [];

  constructor(collection) {
    this.collection = collection;
  }

  /** takes reports whether a put into collection may join the group. */
  takes(collection) {
    return collection === this.collection && this.#texts.length < maxPutsTogether;
  }

  /** join adds a put's document text; the Promise settles with its answer. */
  join(text) {
    return new Promise((resolve, reject) => {
      this.#texts.push(text);
      this.#waiters.push({ resolve, reject });
    });
  }

  /** size is how many puts the group holds. */
  get size() {
    return this.#texts.length;
  }

  /** text is the group's documents as one JSON array text, putMany's argument. */
  text() {
    return `[${this.#texts.join(',')}]`;
  }

  /** first is the only put's document text, for a group of one. */
  first() {
    return this.#texts[0];
  }

  /**
   * settle answers each put from putMany's answer (an array, or its JSON
   * text): its stored document, or the error it failed with. A put the
   * answer says nothing of fails with internal.
   */
  settle(answer) {
    let rs = answer;
    if (typeof answer === 'string') {
      try {
        rs = JSON.parse(answer);
      } catch {
        rs = undefined;
      }
    }
    this.#waiters.forEach((w, i) => {
      const r = Array.isArray(rs) ? rs[i] : undefined;
      if (r === undefined || r === null) w.reject(hiloError('internal', 4, 'put: the store gave no answer for this document'));
      else if (r.__hiloError) w.reject(hiloError(r.__hiloError.code, r.__hiloError.num, r.__hiloError.message));
      else w.resolve(r);
    });
  }

  /** fail rejects every put of the group with err. */
  fail(err) {
    for (const w of this.#waiters) w.reject(err);
  }
}
