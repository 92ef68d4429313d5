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
      return this.#raw.collection(op, this.name, p, o);
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

  /** Resolves to the document named by a key or an id. */
  document(selector) {
    return this.#op('document', selector);
  }

  /** Resolves to the documents named by keys or ids, in order. */
  documents(selectors) {
    return this.#op('documents', selectors);
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
  count() {
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
