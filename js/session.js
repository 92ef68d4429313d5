// RavenDB-style sessions and conventions (the ravendb npm package's names):
// store.openSession() tracks entities and saveChanges() writes them in one
// transaction; store.conventions maps classes to collections and ids.

import { DocumentQuery } from './documentquery.js';

const METADATA = '@metadata';
const NODE_TYPE = 'Raven-Node-Type';

/**
 * Conventions map entities to documents, as the ravendb package's
 * DocumentConventions do. Every function may be replaced before the first
 * session is opened.
 */
export class Conventions {
  #raw;
  #types = new Map(); // js type name → class

  /** @internal */
  constructor(raw, hiloError) {
    this.#raw = raw;
    this.hiloError = hiloError;
    /** The name of an entity's id property. */
    this.identityProperty = 'id';
    /** The collection of an object literal; undefined → '@empty' and a UUID id. */
    this.findCollectionNameForObjectLiteral = () => undefined;
  }

  #names(kind, name) {
    const r = this.#raw.names(kind, name);
    if (typeof r !== 'string') throw r;
    return r;
  }

  /**
   * Makes the names of these classes known before use. Only a store shared
   * by tabs needs it, where names come from the worker: there a sync call
   * such as findCollectionName(Order) for a class not seen yet throws, and
   * sessions look names up by themselves.
   */
  async preload(...types) {
    for (const type of types) await this.collectionOfAsync(Object.create(type.prototype));
  }

  /** @internal collectionOf, fetching the names it needs first where they come from a worker. */
  async collectionOfAsync(entity) {
    for (let i = 0; ; i++) {
      try {
        const collection = this.collectionOf(entity);
        if (collection !== '@empty') this.defaultPrefix(collection);
        return collection;
      } catch (err) {
        if (!err?.missing || !this.#raw.fetch || i >= 8) throw err;
        await this.#raw.fetch(err.missing.kind, err.missing.name);
      }
    }
  }

  /** Joins an id prefix and a key ("/"). */
  get identityPartsSeparator() {
    return this.#names('separator', '');
  }

  /** The collection of entities of a class: its name, pluralized (Order → Orders). */
  findCollectionName(type) {
    return this.#names('collection', this.findJsTypeName(type));
  }

  /**
   * The id prefix of a collection: one upper-case letter is made lower case
   * (Orders → orders); a name with more stays as it is (HRDepts).
   */
  transformClassCollectionNameToDocumentIdPrefix(collection) {
    return this.#names('prefix', collection);
  }

  /**
   * The name of the id property of entities of a collection (ravendb's
   * findIdentityPropertyNameFromCollectionName); identityProperty unless
   * set.
   */
  findIdentityPropertyNameFromCollectionName(collection) {
    void collection;
    return this.identityProperty;
  }

  /** @internal The id property of a collection's entities. */
  idProperty(collection) {
    const p = this.findIdentityPropertyNameFromCollectionName(collection);
    if (p !== null && p !== undefined && typeof p !== 'string') {
      throw this.hiloError('bad_request', 400, 'conventions: findIdentityPropertyNameFromCollectionName must return a string');
    }
    return p;
  }

  /** @internal Whether transformClassCollectionNameToDocumentIdPrefix was set by the app. */
  get customPrefix() {
    return this.transformClassCollectionNameToDocumentIdPrefix !== Conventions.prototype.transformClassCollectionNameToDocumentIdPrefix;
  }

  /** @internal The default id prefix of a collection, whatever the app set. */
  defaultPrefix(collection) {
    return this.#names('prefix', collection);
  }

  /** @internal defaultPrefix, fetching the name first where names come from a worker. */
  async defaultPrefixAsync(collection) {
    for (let i = 0; ; i++) {
      try {
        return this.defaultPrefix(collection);
      } catch (err) {
        if (!err?.missing || !this.#raw.fetch || i >= 8) throw err;
        await this.#raw.fetch(err.missing.kind, err.missing.name);
      }
    }
  }

  /** The name a class is stored under in Raven-Node-Type. */
  findJsTypeName(type) {
    return type.name;
  }

  /** The class registered under name, if any. */
  findJsType(name) {
    return this.#types.get(name);
  }

  /** Registers a class, so documents of it load back as its instances. */
  registerEntityType(type) {
    this.#types.set(this.findJsTypeName(type), type);
    return this;
  }

  /** @internal The collection of an entity. */
  collectionOf(entity) {
    if (entity.constructor === Object || entity.constructor === undefined) {
      return this.findCollectionNameForObjectLiteral(entity) ?? '@empty';
    }
    return this.findCollectionName(entity.constructor);
  }
}

/**
 * Session is a unit of work: entities stored, loaded and deleted are written
 * by saveChanges() in one transaction, all or nothing. Not for concurrent
 * use; open one per unit of work.
 */
export class Session {
  #raw;
  #conv;
  #hiloError;
  #optimistic;
  #byEntity = new Map(); // entity → tracked
  #byId = new Map(); // id → tracked
  #deletes = new Set(); // ids deleted without their entity

  /** @internal Use store.openSession(). */
  constructor(raw, conventions, hiloError, options = {}) {
    if (options === null || typeof options !== 'object') throw hiloError('bad_request', 400, 'openSession: options must be an object');
    const { useOptimisticConcurrency = false, ...rest } = options;
    const unknown = Object.keys(rest);
    if (unknown.length > 0) throw hiloError('bad_request', 400, `openSession: unknown option ${JSON.stringify(unknown[0])}; want useOptimisticConcurrency`);
    if (typeof useOptimisticConcurrency !== 'boolean') throw hiloError('bad_request', 400, 'openSession: useOptimisticConcurrency must be true or false');
    this.#raw = raw;
    this.#conv = conventions;
    this.#hiloError = hiloError;
    this.#optimistic = useOptimisticConcurrency;
    this.advanced = {
      /** The id of a tracked entity (final, or pending as "prefix|" until saveChanges). */
      getDocumentId: (entity) => this.#byEntity.get(entity)?.id ?? null,
      /** The stored _rev of a tracked entity, null before it is saved. */
      getChangeVectorFor: (entity) => this.#byEntity.get(entity)?.rev ?? null,
      /** Whether the entity is tracked by this session. */
      isLoaded: (id) => this.#byId.has(id),
    };
  }

  /**
   * Tracks entity for saveChanges under id, or its identity property, or a
   * new id: a HiLo id given at once, as RavenDB does ("orders/1-A"); an id
   * ending in "/" or "|" or "" is resolved when saved. A changeVector (the
   * third argument, or {changeVector}) is a precondition: saveChanges fails
   * with conflict (1200) unless the stored document has that _rev ("": none).
   */
  async store(entity, id, changeVector) {
    if (entity === null || typeof entity !== 'object' || Array.isArray(entity)) {
      throw this.#hiloError('bad_request', 400, 'store: entity must be an object');
    }
    if (changeVector !== undefined && changeVector !== null && typeof changeVector === 'object') {
      const { changeVector: cv, ...rest } = changeVector;
      const unknown = Object.keys(rest);
      if (unknown.length > 0) throw this.#hiloError('bad_request', 400, `store: unknown option ${JSON.stringify(unknown[0])}; want changeVector`);
      changeVector = cv;
    }
    if (changeVector !== undefined && changeVector !== null && typeof changeVector !== 'string') {
      throw this.#hiloError('bad_request', 400, 'store: changeVector must be a string');
    }
    const known = this.#byEntity.get(entity);
    if (known) {
      if (id !== undefined && id !== known.id) throw this.#hiloError('bad_request', 400, `store: entity is tracked as ${known.id}`);
      if (typeof changeVector === 'string') known.expect = changeVector;
      return;
    }
    const collection = await this.#conv.collectionOfAsync(entity);
    const prop = this.#conv.idProperty(collection);
    if (id === undefined && prop && typeof entity[prop] === 'string' && entity[prop] !== '') id = entity[prop];
    if (id === undefined) {
      id = collection === '@empty' ? '' : await this.#newId(collection);
    }
    if (typeof id !== 'string') throw this.#hiloError('bad_request', 400, 'store: id must be a string');
    if (this.#byId.has(id) && !pending(id)) throw this.#hiloError('bad_request', 400, `store: another entity is tracked as ${id}`);
    const t = { entity, id, collection, typeName: typeNameOf(entity, this.#conv), isNew: true, rev: null, snapshot: null, deleted: false };
    if (typeof changeVector === 'string') t.expect = changeVector;
    this.#track(t);
    if (!pending(id)) setId(entity, prop, id);
  }

  // #newId makes the id of a new entity of collection: a HiLo id, with the
  // prefix of transformClassCollectionNameToDocumentIdPrefix when the app
  // set it. Its numbers are then the prefix's own HiLo numbers, so two
  // collections given one prefix never make the same id; a prefix that is
  // not a plain collection-like name gets this node's sequence instead
  // ("prefix/", resolved when saved).
  async #newId(collection) {
    if (!this.#conv.customPrefix) return this.#raw.generateId(collection);
    const prefix = this.#conv.transformClassCollectionNameToDocumentIdPrefix(collection);
    if (typeof prefix !== 'string' || prefix === '') {
      throw this.#hiloError('bad_request', 400, 'conventions: transformClassCollectionNameToDocumentIdPrefix must return a non-empty string');
    }
    let plain = false;
    try {
      plain = (await this.#conv.defaultPrefixAsync(prefix)) === prefix;
    } catch {
      plain = false;
    }
    if (plain) {
      try {
        return await this.#raw.generateId(prefix);
      } catch (err) {
        if (err?.code !== 'illegal_name') throw err;
      }
    }
    return `${prefix}/`;
  }

  /**
   * Loads the document id (or each of ids) as an entity, tracked: an
   * instance of documentType (a class, or {documentType}) if given, else of
   * the class registered under its Raven-Node-Type.
   */
  async load(idOrIds, documentType) {
    if (documentType !== undefined && typeof documentType !== 'function') {
      if (documentType === null || typeof documentType !== 'object') throw this.#hiloError('bad_request', 400, 'load: want a class or {documentType}');
      const { documentType: t, ...rest } = documentType;
      const unknown = Object.keys(rest);
      if (unknown.length > 0) throw this.#hiloError('bad_request', 400, `load: unknown option ${JSON.stringify(unknown[0])}; want documentType (includes are not served)`);
      if (t !== undefined && typeof t !== 'function') throw this.#hiloError('bad_request', 400, 'load: documentType must be a class');
      documentType = t;
    }
    if (Array.isArray(idOrIds)) {
      const out = {};
      for (const id of idOrIds) out[id] = await this.load(id, documentType);
      return out;
    }
    const id = idOrIds;
    const known = this.#byId.get(id);
    if (known) return known.deleted ? null : known.entity;
    let doc;
    try {
      doc = await this.#raw.get(id);
    } catch (err) {
      if (err.code === 'not_found') return null;
      throw err;
    }
    return this.#entityOf(id, doc, documentType);
  }

  // entityOf tracks the stored document doc (whose _id is id) as an
  // entity: an instance of documentType if given, else of the class
  // registered under its Raven-Node-Type.
  #entityOf(id, doc, documentType) {
    const meta = doc[METADATA] ?? {};
    const Type = documentType ?? (meta[NODE_TYPE] ? this.#conv.findJsType(meta[NODE_TYPE]) : undefined);
    const entity = Type ? Object.create(Type.prototype) : {};
    const { _id, _key, _rev, [METADATA]: _meta, ...fields } = doc;
    Object.assign(entity, fields);
    setId(entity, this.#conv.idProperty(meta['@collection']), id);
    const t = { entity, id, collection: meta['@collection'], typeName: meta[NODE_TYPE], isNew: false, rev: _rev, snapshot: null, deleted: false };
    t.snapshot = bodyOf(t, this.#conv);
    this.#track(t);
    return entity;
  }

  /**
   * A query of a collection's documents: query({collection, documentType?})
   * or query(Class), the collection of Class. Its results are tracked as
   * load's are (an entity already tracked comes back as it is here).
   */
  query(options) {
    let collection;
    let Type;
    if (typeof options === 'function') {
      Type = options;
      collection = this.#conv.collectionOfAsync(Object.create(Type.prototype));
    } else {
      if (options === null || typeof options !== 'object') throw this.#hiloError('bad_query', 1912, 'query: want a class or {collection}');
      const { collection: c, documentType, ...rest } = options;
      const unknown = Object.keys(rest);
      if (unknown.length > 0) throw this.#hiloError('bad_query', 1912, `query: unknown option ${JSON.stringify(unknown[0])}; want collection or documentType (indexName is not served)`);
      if (typeof c !== 'string' || c === '') throw this.#hiloError('bad_query', 1912, 'query: collection must be a non-empty string');
      if (documentType !== undefined && typeof documentType !== 'function') throw this.#hiloError('bad_query', 1912, 'query: documentType must be a class');
      collection = Promise.resolve(c);
      Type = documentType;
    }
    collection.catch(() => {}); // answered by the call that runs the query
    const run = {
      collection,
      idProperty: this.#conv.identityProperty,
      find: (c, q) => this.#raw.find(c, q),
      count: (c, q) => this.#raw.count(c, q),
      track: (doc) => {
        const known = this.#byId.get(doc._id);
        if (known) return known.deleted ? null : known.entity;
        return this.#entityOf(doc._id, doc, Type);
      },
    };
    return new DocumentQuery(run, this.#hiloError);
  }

  /** Marks an entity, or the document with an id, for deletion. */
  delete(entityOrId) {
    if (typeof entityOrId === 'string') {
      const t = this.#byId.get(entityOrId);
      if (t) t.deleted = true;
      else this.#deletes.add(entityOrId);
      return;
    }
    const t = this.#byEntity.get(entityOrId);
    if (!t) throw this.#hiloError('bad_request', 400, 'delete: entity is not tracked by this session');
    t.deleted = true;
  }

  /**
   * Writes every new, changed and deleted entity in one transaction: all or
   * nothing. With useOptimisticConcurrency, a document changed since it was
   * loaded (or a new one whose id exists) fails it with conflict (1200).
   */
  async saveChanges() {
    const items = [];
    const tracked = [];
    for (const id of this.#deletes) {
      items.push({ delete: true, id });
      tracked.push(null);
    }
    for (const t of this.#byEntity.values()) {
      if (t.deleted) {
        if (t.isNew) continue;
        items.push({ delete: true, id: t.id, ifRev: this.#optimistic ? t.rev : '' });
        tracked.push(t);
        continue;
      }
      const body = bodyOf(t, this.#conv);
      if (!t.isNew && body === t.snapshot) continue;
      const item = { id: t.id, collection: t.collection, body: JSON.parse(body), typeName: t.typeName ?? '' };
      if (t.expect !== undefined) {
        if (t.expect === '') item.mustBeNew = true;
        else item.ifRev = t.expect;
      } else if (this.#optimistic) {
        if (t.isNew) item.mustBeNew = true;
        else item.ifRev = t.rev;
      }
      items.push(item);
      tracked.push(t);
    }
    const dropped = [...this.#byEntity.values()].filter((t) => t.deleted && t.isNew);
    if (items.length > 0) {
      const results = await this.#raw.saveBatch(JSON.stringify(items));
      for (const [i, t] of tracked.entries()) {
        if (!t) continue;
        if (t.deleted) {
          this.#untrack(t);
          continue;
        }
        const r = results[i];
        if (t.id !== r._id) {
          this.#byId.delete(t.id);
          t.id = r._id;
          this.#byId.set(t.id, t);
          setId(t.entity, this.#conv.idProperty(t.collection), t.id);
        }
        t.rev = r._rev;
        t.isNew = false;
        delete t.expect;
        t.snapshot = bodyOf(t, this.#conv);
      }
    }
    for (const t of dropped) this.#untrack(t);
    this.#deletes.clear();
  }

  #track(t) {
    this.#byEntity.set(t.entity, t);
    this.#byId.set(t.id, t);
  }

  #untrack(t) {
    this.#byEntity.delete(t.entity);
    if (this.#byId.get(t.id) === t) this.#byId.delete(t.id);
  }
}

// pending reports whether id is resolved only when saved.
function pending(id) {
  return id === '' || id.endsWith('|') || id.endsWith('/');
}

function typeNameOf(entity, conv) {
  if (entity.constructor === Object || entity.constructor === undefined) return undefined;
  return conv.findJsTypeName(entity.constructor);
}

// setId sets the entity's identity property, if it has or may have one.
function setId(entity, prop, id) {
  if (prop) entity[prop] = id;
}

// bodyOf is the document of a tracked entity as JSON text: its fields
// without the identity property.
function bodyOf(t, conv) {
  const prop = conv.idProperty(t.collection);
  if (!prop) return JSON.stringify(t.entity);
  const { [prop]: _id, ...fields } = t.entity;
  return JSON.stringify(fields);
}
