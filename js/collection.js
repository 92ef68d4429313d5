// ArangoDB-style collections over a store (arangojs's names and result
// shapes): store.collection(name) and store.createCollection(name, options).

const json = (v, what, hiloError) => {
  try {
    const t = JSON.stringify(v);
    if (t === undefined) throw new Error('not JSON');
    return t;
  } catch (err) {
    throw hiloError('bad_json', 600, `${what} cannot be turned into JSON: ${err.message}`);
  }
};

/**
 * collectionWrites are the collection operations that write (the others
 * only read): through a shared store each is sent with a receipt, so that
 * it can be sent again when the tab running the store goes away (tabs.js,
 * host.js).
 */
export const collectionWrites = new Set(['save', 'saveAll', 'replace', 'replaceAll', 'update', 'updateAll', 'remove', 'removeAll', 'create']);

/**
 * Collection is one collection of a store. Every method returns a Promise;
 * a multi-document call resolves to one entry per document, an error object
 * ({error: true, errorNum, errorMessage, errorCode}) in place of each that
 * failed.
 */
export class Collection {
  #raw;
  #hiloError;

  /** @internal Use store.collection(name). */
  constructor(raw, name, hiloError) {
    this.#raw = raw;
    this.#hiloError = hiloError;
    this.name = name;
  }

  #op(op, payload, options) {
    try {
      const p = payload === undefined ? undefined : json(payload, op, this.#hiloError);
      const o = options === undefined ? undefined : json(options, `${op} options`, this.#hiloError);
      const done = this.#raw.collection(op, this.name, p, o);
      // As arangojs: a silent write resolves to nothing.
      return options?.silent === true ? done.then(() => undefined) : done;
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Stores a new document; resolves to {_id, _key, _rev} (and new/old as asked). */
  save(doc, options) {
    return this.#op('save', doc, options);
  }

  /** Stores many documents in one transaction. */
  saveAll(docs, options) {
    return this.#op('saveAll', docs, options);
  }

  /**
   * Resolves to the document named by a key or an id. Options, as
   * arangojs's: graceful (true, or {graceful: true}: null when there is
   * none instead of not_found), ifMatch (a _rev the document must have, else
   * conflict 1200), allowDirtyRead (accepted: every read is local).
   */
  async document(selector, options) {
    if (typeof options === 'boolean') options = { graceful: options };
    const { graceful = false, ifMatch } = this.#options('document', options, ['graceful', 'ifMatch', 'allowDirtyRead']);
    if (typeof graceful !== 'boolean') throw this.#hiloError('bad_request', 400, 'document: graceful must be true or false');
    if (ifMatch !== undefined && typeof ifMatch !== 'string') throw this.#hiloError('bad_request', 400, 'document: ifMatch must be a string');
    let doc;
    try {
      doc = await this.#op('document', selector);
    } catch (err) {
      if (graceful && err?.code === 'not_found') return null;
      throw err;
    }
    if (ifMatch && doc._rev !== ifMatch) {
      throw this.#hiloError('conflict', 1200, `document ${JSON.stringify(doc._id)} has _rev ${doc._rev}, not ${ifMatch}`);
    }
    return doc;
  }

  /** Resolves to the documents named by keys or ids, in order. Options: allowDirtyRead (accepted: every read is local). */
  async documents(selectors, options) {
    this.#options('documents', options, ['allowDirtyRead']);
    return this.#op('documents', selectors);
  }

  // #options checks that options is undefined or an object of known names.
  #options(op, options, known) {
    if (options === undefined || options === null) return {};
    if (typeof options !== 'object') throw this.#hiloError('bad_request', 400, `${op}: options must be an object`);
    for (const k of Object.keys(options)) {
      if (!known.includes(k)) throw this.#hiloError('bad_request', 400, `${op}: unknown option ${JSON.stringify(k)}; want ${known.join(', ')}`);
    }
    return options;
  }

  /** Replaces the document named by selector (a key, an id, or a document with _key) with doc. */
  replace(selector, doc, options) {
    return this.#op('replace', withSelector(selector, doc), options);
  }

  /** Replaces many documents (each with _key or _id). */
  replaceAll(docs, options) {
    return this.#op('replaceAll', docs, options);
  }

  /** Merges patch into the document named by selector. */
  update(selector, patch, options) {
    return this.#op('update', withSelector(selector, patch), options);
  }

  /** Merges many patches (each with _key or _id). */
  updateAll(patches, options) {
    return this.#op('updateAll', patches, options);
  }

  /** Removes the document named by selector. */
  remove(selector, options) {
    return this.#op('remove', typeof selector === 'object' && selector !== null ? selector._key ?? selector._id : selector, options);
  }

  /** Removes many documents (keys, ids or documents). */
  removeAll(selectors, options) {
    return this.#op('removeAll', selectors, options);
  }

  /** Resolves to {count}: how many documents the collection holds. */
  count(...args) {
    if (args.length > 0) return Promise.reject(this.#hiloError('bad_request', 400, 'count: takes no arguments'));
    return this.#op('count').then((count) => ({ count }));
  }
}

// withSelector returns doc with the selector's key (or id) in it.
function withSelector(selector, doc) {
  if (doc === null || typeof doc !== 'object') return doc;
  if (typeof selector === 'object' && selector !== null) {
    selector = selector._key ?? selector._id;
  }
  if (typeof selector !== 'string') return doc;
  return selector.includes('/') ? { ...doc, _id: selector, _key: undefined } : { ...doc, _key: selector };
}
