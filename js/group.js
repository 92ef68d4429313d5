// Calls made together and sent as one: puts as one putMany, by a store of
// its own (index.js) and by a store shared by the tabs (tabs.js); gets as
// one message to the host of a shared store (tabs.js).

import { hiloError } from './errors.js';

/**
 * maxTogether bounds the calls of one group: for puts, a few megabytes of
 * small documents, well under putMany's 100,000.
 */
export const maxTogether = 10000;

/**
 * Group is calls waiting to go as one: each one's item (a put's document
 * text, a get's id) and the Promise it got. Calls into one collection,
 * when it is given.
 */
export class Group {
  #items = [];
  #waiters = [];

  constructor(collection) {
    this.collection = collection;
  }

  /** takes reports whether a call into collection may join the group. */
  takes(collection) {
    return collection === this.collection && this.#items.length < maxTogether;
  }

  /** join adds a call's item; the Promise settles with its answer. */
  join(item) {
    return new Promise((resolve, reject) => {
      this.#items.push(item);
      this.#waiters.push({ resolve, reject });
    });
  }

  /** size is how many calls the group holds. */
  get size() {
    return this.#items.length;
  }

  /** items are the calls' items, in the order made. */
  get items() {
    return this.#items;
  }

  /**
   * settle answers each call from the group's answer (an array, or its
   * JSON text): one entry per call, its result or {__hiloError: {code,
   * num, message}}. A call the answer says nothing of fails with internal.
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
      if (r === undefined || r === null) w.reject(hiloError('internal', 4, 'the store gave no answer for this call of a group'));
      else if (r.__hiloError) w.reject(hiloError(r.__hiloError.code, r.__hiloError.num, r.__hiloError.message));
      else w.resolve(r);
    });
  }

  /** fail rejects every call of the group with err. */
  fail(err) {
    for (const w of this.#waiters) w.reject(err);
  }
}

/**
 * TaskMark tells whether a call of some kind was made earlier in the
 * current task (before the next microtask): the first of a task goes at
 * once, and the ones after it know to wait for the end of the task.
 */
export class TaskMark {
  #set = false;

  /** again reports whether the mark was set earlier in this task, and sets it. */
  again() {
    if (this.#set) return true;
    this.#set = true;
    queueMicrotask(() => (this.#set = false));
    return false;
  }
}

/** groupable reports whether a put of doc into collection may join a group of puts. */
export function groupable(collection, doc) {
  return typeof collection === 'string' && doc !== null && typeof doc === 'object' && !Array.isArray(doc);
}

/** PutGroup is puts into one collection, their documents as JSON texts. */
export class PutGroup extends Group {
  /** text is the documents as one JSON array text, putMany's argument. */
  text() {
    return `[${this.items.join(',')}]`;
  }
}
