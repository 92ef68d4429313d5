// Type declarations for the hilodb npm package.

/** Options for {@link openStore}. */
export interface OpenOptions {
  /** The sync server's websocket endpoint, e.g. `ws://localhost:8080/v1/sync`. */
  url: string;
  /**
   * Further servers of the same cluster (sync servers over one etcd
   * cluster): when the server in use cannot be reached or stops answering,
   * the store moves to the next. Ids, checkpoints and preconditions hold
   * across the move, since every server answers from one state.
   */
  urls?: string[];
  /** The database on the server; created on first use. */
  database: string;
  /**
   * The token that authorizes this client for `database`, if the server
   * wants one: a static token, or a function giving a signed token (JWT)
   * that expires. The function is called at start, before the token in use
   * expires (the fresh one goes to the live connection: no reconnect, no
   * pending write lost) and after the server refused a token as
   * `unauthorized`. A store shared by the tabs of an origin asks a page
   * that uses it.
   */
  token?: string | (() => Promise<string>);
  /**
   * The node tag this client was given before (see {@link StoreInfo.node}),
   * to keep it across sessions; leave it out to be given a new one.
   */
  node?: string;
  /**
   * `true` (the default) replicates live for the store's lifetime: local
   * writes are pushed as they are made, changes of other clients arrive as
   * the server streams them, and a lost connection is retried with backoff
   * (errors go to the `'error'` event). `close()` waits, within a bound,
   * for what is pending to be pushed, then stops it.
   *
   * `false` makes a local-only store: writes stay in it until
   * {@link Store.sync} is called (ids are still leased from the server).
   */
  sync?: boolean;
  /**
   * How a conflict (a document written here while the server took another
   * write of it) is settled. Default `'server'`.
   */
  onConflict?: ConflictPolicy;
  /**
   * Keeps the store across reloads under this name: documents, pending
   * writes, the sync checkpoint, conflicts, the node tag and the leased HiLo
   * range, so ids go on without a new lease and are never handed out twice.
   * In browsers and workers it is an IndexedDB database `hilodb:<name>`; in
   * Node it is a file path (beside it: `<path>.log`, `<path>.node`,
   * `<path>.ranges`, and `<path>.lock` while open).
   *
   * In a browser page the store is shared by every tab of the origin that
   * opens the same name: it runs once, off the main thread, in one tab's
   * host worker (named by a SharedWorker; both run `shared.js`), and each tab's
   * store talks to it. A write in one tab is read at once in every tab and
   * fires `'change'` there; sync runs once per origin; the store lives
   * while one tab has it open. When the tab running it goes away, the next
   * tab's host worker takes it over: reads, `put`s, `putMany`s, `delete`s,
   * sessions' `saveChanges` and collection writes (`save`, `update`,
   * `remove`, their `…All` forms, `replace`, `createCollection`) in flight
   * are sent again (a receipt stored with each tells the next host whether
   * it was made, and what a collection write answered); `nextIdentityFor`
   * and `seedIdentityFor` in flight reject with `unavailable` (503), to be
   * retried. Elsewhere
   * (Node, a worker, or `shared: false`) only one store may use a name at a
   * time: a second one rejects with `locked` (423).
   *
   * In a browser the store lives in the IndexedDB database `hilodb:<name>`,
   * with its log in the origin private file system when it was made where a
   * dedicated worker could write it (a store in a worker holds its files
   * itself; one in a page with `shared: false` starts `writer.js`).
   *
   * A write (`put`, `delete`) resolves only once it is durable there: a
   * killed tab, browser or process cannot take it back. Each write appends a
   * record to a log (concurrent writes share one storage commit), which is
   * compacted into a snapshot in the background, so a write costs what it
   * changes, not what the store holds.
   *
   * Default: in a browser page, the `database` name (a page's store is kept
   * across reloads unless `false`); elsewhere (Node, workers) `false`, a
   * store in memory whose unpushed writes {@link Store.close} reports as
   * `lost`.
   */
  persist?: string | false;
  /**
   * With `persist`: `'strict'` (default) resolves a write once the
   * operating system holds it, so a killed tab, browser, worker or Node
   * process keeps it (IndexedDB's `'relaxed'` commit; a file write in Node);
   * `'flushed'` resolves it once it is on the disk, so a power cut keeps it
   * too (IndexedDB's `'strict'` commit; `fdatasync`); `'relaxed'` resolves
   * it at once and stores it moments later, so a crash can lose the last
   * writes that resolved. Whatever the level, writes are on the disk before
   * they are pushed to the server, and `flush()` puts every write so far on
   * the disk.
   */
  durability?: 'strict' | 'flushed' | 'relaxed';
  /**
   * Keep the local change feed, so {@link Store.changes} can tell what was
   * written (locally or by others) since a point. Off by default: it costs a
   * few keys per write.
   */
  changeFeed?: boolean;
  /**
   * With `persist` in a browser page: `false` opens the store in this page
   * alone (another tab then gets `locked`) instead of sharing it with every
   * tab through one tab's host worker (the default). A shared store takes
   * `onConflict` `'server'` or `'local'`; a merge function needs `false`.
   */
  shared?: boolean;
  /**
   * Milliseconds a call waits for the server's reply (default 15,000). A
   * server that stops answering while its socket stays open (a sleeping
   * laptop, a dead network) fails the call with `needs_server` (1900), or it
   * is served offline where it can be; the connection is dropped, the
   * `'status'` event says `'offline'`, and it is dialed again later.
   */
  requestTimeout?: number;
  /**
   * Milliseconds after which a connection that received nothing is pinged
   * (default 600), so a dead one is noticed without a call: an idle
   * connection whose ping gets no reply within as long is dropped, so
   * `'status'` turns `'offline'` within about 2 seconds of the network's end.
   */
  heartbeat?: number;
  /**
   * Whole HiLo ranges to hold leased beyond the one in use (0 to 16,
   * default 0), topped up in the background while online. Offline, ids go on
   * from the reserve until it is spent; with `persist`, the reserve survives
   * reloads too. Ranges grow (32, 64, 128, … up to 1,048,576 numbers) while
   * they are used up quickly.
   */
  reserve?: number;
}

/** One version of a document: the body, or a deletion (`doc` is `null`). */
export interface Version<T extends object = Document> {
  id: string;
  rev: string;
  doc: Stored<T> | null;
  deleted: boolean;
  /**
   * Only on a version {@link Store.conflicts} keeps: `true` when this
   * store's write won over it (it is another client's write the server
   * refused; `doc` is `null` when the server left out a large one), absent
   * when it is this store's write that lost.
   */
  won?: boolean;
}

/**
 * A merge function for {@link OpenOptions.onConflict}. It gets the local
 * version and the server's and returns what to keep: `remote` or `local`
 * themselves, a merged document (written on top of the server's revision
 * and pushed on the next sync), or `null` to delete.
 *
 * It runs inside the store's write transaction and must return at once: a
 * function that returns a Promise, throws, or returns anything else keeps
 * the server's version (the local one stays readable with
 * {@link Store.conflicts}) and reports a `merge_failed` error event. It
 * should be deterministic: every client that meets the conflict runs it.
 */
export type MergeFunction = (local: Version, remote: Version) => Version | Document | null;

/**
 * `'server'` keeps the server's version; the local one stays readable with
 * {@link Store.conflicts}. `'local'` writes the local version again on top of
 * the server's. A function merges.
 */
export type ConflictPolicy = 'server' | 'local' | MergeFunction;

/** The result of {@link Store.sync}. */
export interface SyncResult {
  /** Local writes the server accepted. */
  pushed: number;
  /** Changes of other clients applied to this store. */
  pulled: number;
}

/** The payload of a `'conflict'` event. */
export interface ConflictEvent {
  id: string;
  local: Version;
  remote: Version;
  /** Which version the store kept. */
  kept: 'remote' | 'local' | 'merged';
  /**
   * `true` when this store's write won: the server took it and refused
   * `remote`, another client's write (that client hears of the conflict
   * with `won: false`); `local` is the version that won and `kept` is
   * `'local'`. `false` when this store's write met the server's version.
   */
  won: boolean;
}

/** The payload of a `'change'` event: documents changed by other clients. */
export interface ChangeEvent {
  changes: Array<{ id: string; rev: string; deleted: boolean }>;
}

/** Events of a {@link Store} and their payloads. */
export interface StoreEvents {
  conflict: ConflictEvent;
  change: ChangeEvent;
  /**
   * A failure in the background: live replication (reported once per error
   * code until it works again; it keeps retrying), a merge function
   * (`merge_failed`), or saving a persisted store.
   */
  error: HiloError;
  /**
   * The connection to the server: `'online'` once it is up, `'offline'` once
   * it is lost or stops answering (an idle connection's heartbeat ping gets
   * no reply: within about 2 seconds by default; a call waiting for its
   * reply: within `requestTimeout`), and in a browser at once on its
   * `offline` event; `'syncing'` while a sync round runs. Offline is a
   * state, not an error: writes go on and are pushed once it is back.
   * Reported once per change. `info().connected` agrees with it (after a
   * browser `offline` event, once the connection has dropped too).
   */
  status: StatusEvent;
  /**
   * The number of local writes the server has not acknowledged (as
   * {@link Store.pending}), reported once when the first listener is added
   * and then whenever it changes (read every 250 ms while writes wait,
   * every second while none does, as long as someone listens).
   */
  pending: PendingEvent;
}

/** The payload of a `'pending'` event. */
export interface PendingEvent {
  pending: number;
}

/** A change of the connection's state. */
export interface StatusEvent {
  state: 'online' | 'offline' | 'syncing';
}

/** The fields hilodb sets on every stored document. */
export interface DocumentMeta {
  /** The document id: collection prefix, `/`, key, e.g. `orders/1-A`. */
  _id: string;
  /** The key part of `_id`, e.g. `1-A`. */
  _key: string;
  /** The revision, new on every write. */
  _rev: string;
  '@metadata': {
    /** The collection the document was stored in. */
    '@collection': string;
    [key: string]: unknown;
  };
}

/** A JSON object as a document to store. `_id` or `_key` choose its id. */
export type Document = { [key: string]: unknown };

/** A stored document: the document with its {@link DocumentMeta}. */
export type Stored<T extends object = Document> = T & DocumentMeta;

/** Where a store stands with the sync server. */
/** One entry of the local change feed: a document at its latest write. */
export interface FeedEntry<T extends object = Document> {
  /** The local sequence number of this write. */
  seq: number;
  id: string;
  rev: string;
  deleted: boolean;
  /** The document as written; null when deleted. */
  doc: Stored<T> | null;
}

export interface StoreInfo {
  /** This client's node tag, given by the server; a local stand-in before the first connect. */
  node: string;
  /** The server's node tag, the suffix of HiLo ids (`orders/1-A`); empty before the first connect. */
  serverTag: string;
  /** Whether a connection to the server is up now. */
  connected: boolean;
  /**
   * Whether the store is on its way online: a persisted store opened before
   * opens without waiting for the server, and connects in the background;
   * true until that first attempt has ended.
   */
  connecting: boolean;
  /** Whether the store runs in the worker shared by the origin's tabs (a persisted store in a page). */
  shared: boolean;
}

// errcode:begin (from Go's package errcode; its tests check this block)
/**
 * Every error code, with its number and HTTP-style status.
 *
 * - `internal` (4, 500): a failure inside hilodb; see its log
 * - `bad_parameter` (10, 400): a parameter out of range or of the wrong kind
 * - `bad_request` (400, 400): a request of the wrong shape or types, or values out of range
 * - `unauthorized` (401, 401): a wrong or missing token
 * - `forbidden_origin` (403, 403): a browser origin the server does not allow
 * - `unknown_op` (404, 404): no such op
 * - `method_not_allowed` (405, 405): an HTTP method the route does not take
 * - `idle_timeout` (408, 408): nothing received for the idle time; the connection closes
 * - `message_too_big` (413, 413): a message over the size limit; the connection closes
 * - `forbidden_host` (421, 421): a Host header the server does not answer
 * - `locked` (423, 423): the persisted store is open elsewhere
 * - `rate_limited` (429, 429): too many requests on this connection; retry later
 * - `unavailable` (503, 503): shutting down, or the storage failed
 * - `timeout` (504, 504): no answer in time
 * - `bad_json` (600, 400): not JSON, not UTF-8, or not a JSON object
 * - `conflict` (1200, 412): the _rev does not match the stored document's
 * - `merge_failed` (1201, 500): the app's merge function failed; the server's version was kept
 * - `not_found` (1202, 404): no such document
 * - `collection_not_found` (1203, 404): no such collection
 * - `duplicate_name` (1207, 409): a collection of that name exists
 * - `illegal_name` (1208, 400): an illegal collection or database name
 * - `unique_constraint` (1210, 409): a document with that key exists
 * - `index_not_found` (1212, 404): no such index
 * - `illegal_key` (1221, 400): an illegal document key
 * - `unexpected_key` (1222, 400): a key given where the collection makes its own
 * - `out_of_keys` (1225, 500): a HiLo tag or identity has no numbers left
 * - `bad_document` (1227, 400): a pushed item with an invalid id, rev or document
 * - `database_not_found` (1228, 404): a database the server does not serve; the connection closes
 * - `invalid_key_generator` (1232, 400): invalid keyOptions
 * - `query_parse` (1501, 400): an AQL query outside hilodb's subset or malformed; the message names the position
 * - `bind_missing` (1551, 400): a query's bind parameter without a value
 * - `bind_unused` (1552, 400): a bind parameter the query does not use
 * - `bind_bad_value` (1553, 400): a bind parameter of the wrong kind (a collection's is a name)
 * - `cursor_not_found` (1600, 404): no such cursor: fetched to its end, deleted, or past its ttl
 * - `needs_server` (1900, 503): the sync server is needed and cannot be reached
 * - `hello_required` (1901, 400): a request before hello
 * - `closed` (1902, 503): the store was closed
 * - `rejected` (1903, 422): the server refused a local write; it stays pending
 * - `too_deep` (1904, 400): JSON nested more than 128 levels
 * - `batch_too_big` (1905, 413): more items in one request than the server's batch limit
 * - `reply_too_big` (1906, 413): a reply would pass the server's bound; ask for less
 * - `forbidden` (1907, 403): an op the server does not allow
 * - `hello_timeout` (1908, 408): no hello within the hello deadline; the connection closes
 * - `server_busy` (1909, 503): the server holds as many incoming bytes as it allows; the connection closes
 * - `too_many_connections` (1910, 503): over the server's total or per-address connection limit
 * - `unknown_path` (1911, 404): no such route
 * - `bad_query` (1912, 400): a query, selector or index definition that cannot run: an unknown operator, a malformed selector, a bad sort or cursor
 * - `damaged` (1913, 500): a persisted store's files were changed after they were written; see docs/operations.md
 * - `stale_rev` (1914, 409): a pushed _rev not newer than the document's stored one, or too far ahead of the server's clock
 * - `body_timeout` (1915, 408): an HTTP request body that did not arrive within the body deadline; the connection closes
 */
export type ErrorCode =
  | 'internal'
  | 'bad_parameter'
  | 'bad_request'
  | 'unauthorized'
  | 'forbidden_origin'
  | 'unknown_op'
  | 'method_not_allowed'
  | 'idle_timeout'
  | 'message_too_big'
  | 'forbidden_host'
  | 'locked'
  | 'rate_limited'
  | 'unavailable'
  | 'timeout'
  | 'bad_json'
  | 'conflict'
  | 'merge_failed'
  | 'not_found'
  | 'collection_not_found'
  | 'duplicate_name'
  | 'illegal_name'
  | 'unique_constraint'
  | 'index_not_found'
  | 'illegal_key'
  | 'unexpected_key'
  | 'out_of_keys'
  | 'bad_document'
  | 'database_not_found'
  | 'invalid_key_generator'
  | 'query_parse'
  | 'bind_missing'
  | 'bind_unused'
  | 'bind_bad_value'
  | 'cursor_not_found'
  | 'needs_server'
  | 'hello_required'
  | 'closed'
  | 'rejected'
  | 'too_deep'
  | 'batch_too_big'
  | 'reply_too_big'
  | 'forbidden'
  | 'hello_timeout'
  | 'server_busy'
  | 'too_many_connections'
  | 'unknown_path'
  | 'bad_query'
  | 'damaged'
  | 'stale_rev'
  | 'body_timeout';
// errcode:end

/**
 * The error every rejected Promise of this package carries, and every
 * `'error'` event: a {@link ErrorCode} and its number. Test for it with
 * `err instanceof HiloError`.
 */
export declare class HiloError extends Error {
  constructor(message: string, code?: ErrorCode, num?: number);
  /** `'HiloError'`. */
  readonly name: string;
  /** A stable word naming the error, e.g. `"illegal_key"`. */
  code: ErrorCode;
  /** The error number, e.g. 1221. */
  num: number;
}

/** What {@link Store.close} resolves to. */
export interface CloseResult {
  /** Local writes the server had not acknowledged when the store closed. */
  pending: number;
  /**
   * Of those, the ones gone with the store: all of them for a store without
   * `persist`, none for a persisted one (they are pushed by its next session).
   */
  lost: number;
}

/** Options of {@link Store.put}. Any other option is an error. */
export interface PutOptions {
  /** A precondition on the stored `_rev` (as a `_rev` in the document is). */
  rev?: string;
  /** The same as `rev` (ArangoDB's If-Match). */
  ifMatch?: string;
  /** `true`: a `_rev` in the document is not checked (the write always applies). */
  ignoreRevs?: boolean;
}

/** A class of entities (anything with a constructor). */
export type EntityType = abstract new (...args: never[]) => object;

/** Maps entities to documents (the ravendb package's DocumentConventions). */
export declare class Conventions {
  private constructor();
  /** The name of an entity's id property (default `'id'`). */
  identityProperty: string;
  /** The identity parts separator (`'/'`). */
  readonly identityPartsSeparator: string;
  /** The collection of a class: its name, pluralized (`Order` → `Orders`). */
  findCollectionName(type: EntityType): string;
  /**
   * A collection's id prefix: one upper-case letter made lower case
   * (`Orders` → `orders`); more stay (`HRDepts`). Set by the app, a session's
   * new ids take its prefix, with the prefix's own HiLo numbers (a prefix
   * that is not a plain name, such as `Memo`, gets this node's sequence).
   */
  transformClassCollectionNameToDocumentIdPrefix(collection: string): string;
  /** The id property of a collection's entities (default: `identityProperty`). */
  findIdentityPropertyNameFromCollectionName(collection: string): string;
  /** The name stored in `Raven-Node-Type` (default: the class's name). */
  findJsTypeName(type: EntityType): string;
  /** The registered class of a `Raven-Node-Type`. */
  findJsType(name: string): EntityType | undefined;
  /** The collection of an object literal; `undefined` → `@empty` with a UUID id. */
  findCollectionNameForObjectLiteral: (entity: object) => string | undefined;
  /** Registers a class, so its documents load back as its instances. */
  registerEntityType(type: EntityType): this;
  /**
   * Makes the names of these classes known before use. Only a store shared
   * by tabs needs it: there names come from the worker, and a synchronous
   * call such as `findCollectionName(Order)` for a class not seen yet
   * throws `bad_request`. Sessions look names up by themselves.
   */
  preload(...types: EntityType[]): Promise<void>;
}

/** A RavenDB-style unit of work: `saveChanges()` writes everything in one transaction, all or nothing. */
export declare class Session {
  private constructor();
  /**
   * Tracks `entity` under `id`, its identity property, or a new id: a HiLo
   * id at once (`orders/1-A`); `"prefix|"` (identity), `"prefix/"` (node
   * sequence) and `""` (UUID) are resolved when saved. A `changeVector`
   * (the `_rev` the stored document must have; `""`: it must not exist) is
   * a precondition for `saveChanges`.
   */
  store(entity: object, id?: string, changeVector?: string | { changeVector?: string }): Promise<void>;
  /**
   * Loads a document as an entity — an instance of `documentType` if given,
   * else of the class registered under its `Raven-Node-Type` — or `null`.
   */
  load<T extends object = Document>(id: string, documentType?: EntityType | { documentType?: EntityType }): Promise<T | null>;
  load<T extends object = Document>(ids: string[], documentType?: EntityType | { documentType?: EntityType }): Promise<Record<string, T | null>>;
  /** Marks an entity, or the document with an id, for deletion. */
  delete(entityOrId: object | string): void;
  /** Writes every new, changed and deleted entity in one transaction. */
  saveChanges(): Promise<void>;
  readonly advanced: {
    getDocumentId(entity: object): string | null;
    getChangeVectorFor(entity: object): string | null;
    isLoaded(id: string): boolean;
  };
}

/** ArangoDB's document result: the document's header, and new/old as asked. */
export interface DocumentResult<T extends object = Document> {
  _id: string;
  _key: string;
  _rev: string;
  /** The revision before a replace, an update or an overwrite. */
  _oldRev?: string;
  /** The stored document, with `returnNew`. */
  new?: Stored<T>;
  /** The previous document, with `returnOld`. */
  old?: Stored<T>;
}

/** A failed item of a multi-document call, in place of its result. */
export interface DocumentError {
  error: true;
  errorNum: number;
  errorMessage: string;
  errorCode: ErrorCode;
}

/** Options of collection writes (ArangoDB's); each call takes its own, any other is an error. */
export interface CollectionWriteOptions {
  returnNew?: boolean;
  returnOld?: boolean;
  /** Resolve to nothing (`undefined`, as arangojs) instead of the result header. */
  silent?: boolean;
  /** save: what to do with an existing key (default `'conflict'`). */
  overwriteMode?: 'ignore' | 'replace' | 'update' | 'conflict';
  /** update: `false` removes attributes set to null. */
  keepNull?: boolean;
  /** update: `false` replaces nested objects instead of merging them. */
  mergeObjects?: boolean;
  /** `false`: a `_rev` in the document is a precondition (ArangoDB's default is `true`). */
  ignoreRevs?: boolean;
  /** A precondition on the stored `_rev` (ArangoDB's If-Match). */
  ifMatch?: string;
  /** The same as `ifMatch`. */
  rev?: string;
}

/** Key generation of a created collection (ArangoDB's keyOptions). */
export interface KeyOptions {
  type?: 'traditional' | 'autoincrement' | 'padded' | 'uuid';
  allowUserKeys?: boolean;
  increment?: number;
  offset?: number;
}

/** An ArangoDB-style collection of a store: arangojs's method names and result shapes. */
export declare class Collection<T extends object = Document> {
  private constructor();
  readonly name: string;
  save(doc: T, options?: CollectionWriteOptions): Promise<DocumentResult<T>>;
  saveAll(docs: T[], options?: CollectionWriteOptions): Promise<(DocumentResult<T> | DocumentError)[]>;
  /**
   * The document named by a key or an id. `graceful` (or `true`): null when
   * there is none instead of `not_found`; `ifMatch`: the `_rev` it must have,
   * else `conflict` (1200); `allowDirtyRead` is accepted (reads are local).
   */
  document(selector: string, options?: boolean | { graceful?: boolean; ifMatch?: string; allowDirtyRead?: boolean }): Promise<Stored<T>>;
  documents(selectors: string[], options?: { allowDirtyRead?: boolean }): Promise<(Stored<T> | DocumentError)[]>;
  replace(selector: string | { _key?: string; _id?: string }, doc: T, options?: CollectionWriteOptions): Promise<DocumentResult<T>>;
  replaceAll(docs: (T & ({ _key: string } | { _id: string }))[], options?: CollectionWriteOptions): Promise<(DocumentResult<T> | DocumentError)[]>;
  update(selector: string | { _key?: string; _id?: string }, patch: Partial<T>, options?: CollectionWriteOptions): Promise<DocumentResult<T>>;
  updateAll(patches: (Partial<T> & ({ _key: string } | { _id: string }))[], options?: CollectionWriteOptions): Promise<(DocumentResult<T> | DocumentError)[]>;
  remove(selector: string | { _key?: string; _id?: string }, options?: CollectionWriteOptions): Promise<DocumentResult<T>>;
  removeAll(selectors: (string | { _key?: string; _id?: string })[], options?: CollectionWriteOptions): Promise<(DocumentResult<T> | DocumentError)[]>;
  count(): Promise<{ count: number }>;
}

/** A document store. Every method returns a Promise that rejects with a {@link HiloError}. */
export declare class Store {
  private constructor();
  /**
   * Stores `doc` in `collection` and resolves to the stored document. Its id
   * comes from `doc._id`, else `doc._key`, else a HiLo id such as
   * `orders/1-A`, handed out locally from a number range leased from the
   * server (offline, before any range was leased for the collection, a
   * time-ordered UUID such as `orders/0195f3a2-7c1e-7000-8a3b-1f2e3d4c5b6a`). A `_rev` in `doc` (or `options.rev`) is a precondition against
   * lost updates: a stale or made-up one rejects with `conflict` (1200) and
   * changes nothing. Puts made together (a `Promise.all`, a loop without
   * `await`) may go to the store as one transaction and one durable write,
   * each settled with its own document or error, in the order made.
   */
  put<T extends object = Document>(collection: string, doc: T, options?: PutOptions): Promise<Stored<T>>;
  /**
   * Stores many documents of `collection` in one transaction — one durable
   * write, however many documents — and resolves to one entry per document,
   * in order: the stored document, or a {@link HiloError} for one that
   * failed (an illegal key, say; the others are stored). At most 100,000
   * documents per call.
   */
  putMany<T extends object = Document>(collection: string, docs: T[]): Promise<(Stored<T> | HiloError)[]>;
  /** The conventions that map entities to documents. */
  readonly conventions: Conventions;
  /** Opens a RavenDB-style session. `useOptimisticConcurrency`: stale writes fail with `conflict`. */
  openSession(options?: { useOptimisticConcurrency?: boolean }): Session;
  /** The next value of the cluster-wide identity `prefix` (1, 2, …), from the server. */
  nextIdentityFor(prefix: string): Promise<number>;
  /** Sets identity `prefix` to `value` (only upwards unless `force`); resolves to its value then. */
  seedIdentityFor(prefix: string, value: number, force?: boolean): Promise<number>;
  /** The ArangoDB-style collection `name` (it need not be created first). */
  collection<T extends object = Document>(name: string): Collection<T>;
  /** Defines collection `name` with `{keyOptions}` and resolves to it; `duplicate_name` (1207) if it exists. */
  createCollection<T extends object = Document>(name: string, options?: { keyOptions?: KeyOptions }): Promise<Collection<T>>;
  /**
   * Resolves to up to `limit` (1 to 10,000, default 100) documents of
   * `collection` — those whose `_id` is the collection's prefix, `/` and a
   * key — in key order (by `_id`, as strings), after the `_id` `after`.
   * `next` is the cursor for the following page, `null` after the last.
   */
  list<T extends object = Document>(collection: string, options?: { limit?: number; after?: string | null }): Promise<{ docs: Stored<T>[]; next: string | null }>;
  /** Resolves to the document with the given `_id`; rejects with `not_found` (1202) when there is none. */
  get<T extends object = Document>(id: string): Promise<Stored<T>>;
  /**
   * Removes the document with the given `_id`; rejects with `not_found`
   * (1202) when there is none. `rev` (or `ifMatch`) is a precondition: a
   * stale or made-up one rejects with `conflict` (1200) and removes nothing.
   */
  delete(id: string, options?: { rev?: string; ifMatch?: string }): Promise<void>;
  /** Resolves to this store's node tag, the server's tag and the connection state. */
  info(): Promise<StoreInfo>;
  /**
   * One replication round: pushes every pending local write, then pulls every
   * change of other clients. Conflicts are settled by the store's
   * {@link OpenOptions.onConflict} policy. Rejects with `needs_server` when
   * the server cannot be reached (the writes stay pending).
   */
  sync(): Promise<SyncResult>;
  /**
   * With `changeFeed`: the documents written after the local sequence
   * number `since` (0: all), local writes and remote changes alike, each
   * once at its latest write, in that order; pass `last` as `since` next
   * time. At most `limit` (1 to 10,000; default 1,000).
   */
  changes<T extends object = Document>(options?: { since?: number; limit?: number }): Promise<{
    results: FeedEntry<T>[];
    /** The sequence number of the last entry returned: `since` for the next page. */
    last: number;
    /** The feed's newest sequence number now. */
    head: number;
  }>;
  /**
   * With `changeFeed`: calls `listener` with every document written from now
   * on (or after the sequence number `since`), local writes, other tabs'
   * writes and remote changes alike, as they are written: in batches of at
   * most `limit` (default 1,000), in feed order, each document once at its
   * latest write, none skipped however fast they come. A listener that
   * returns a Promise is awaited before the next batch. Returns the function
   * that stops it; closing the store stops it too. Errors of the feed itself
   * go to the `'error'` event.
   */
  watch<T extends object = Document>(
    listener: (batch: { results: FeedEntry<T>[]; last: number }) => void | Promise<void>,
    options?: { since?: number; limit?: number },
  ): () => void;
  /** Resolves to the number of documents with local writes the server has not acknowledged. */
  pending(): Promise<number>;
  /**
   * Resolves to the losing versions kept for `id`, oldest first: this
   * store's writes that lost, and (with `won: true`) other clients' writes
   * that lost to this store's.
   */
  conflicts<T extends object = Document>(id: string): Promise<Version<T>[]>;
  /**
   * Without an id: the ids of the documents with unresolved conflicts
   * (losing versions kept until {@link Store.clearConflicts}), lost or
   * won, in id order. A persisted store keeps them across reloads.
   */
  conflicts(): Promise<string[]>;
  /** Forgets the losing versions kept for `id`. */
  clearConflicts(id: string): Promise<void>;
  /**
   * With {@link OpenOptions.persist}: resolves once every write made so far
   * is durable. Writes are durable when they resolve already, unless the
   * store was opened with `durability: 'relaxed'`.
   */
  flush(): Promise<void>;
  /**
   * Calls `listener` for every event of `type`, after the fact (never inside
   * the store's work). Returns a function that removes the listener.
   */
  on<K extends keyof StoreEvents>(type: K, listener: (event: StoreEvents[K]) => void): () => void;
  /** Removes a listener added with {@link Store.on}. */
  off<K extends keyof StoreEvents>(type: K, listener: (event: StoreEvents[K]) => void): void;
  /**
   * Waits while online, at most `timeout` ms (default 5,000), for the local
   * writes the server has not acknowledged to be pushed (a store with
   * `sync: false` is not waited for), stops live replication, waits for a
   * persisted store's relaxed writes, gives unused ids back to the server
   * (a persisted store keeps them for the next session) and closes the
   * connection and the store. Resolves to how many writes were still
   * pending, and how many of those are lost. Calls after it reject with
   * `closed`.
   */
  close(options?: { timeout?: number }): Promise<CloseResult>;
}

/**
 * Opens a store connected to a hilodb sync server. The first call in a
 * JavaScript realm loads the WebAssembly runtime, which all stores share.
 *
 * It resolves once the server has accepted the client, or, when the server
 * cannot be reached, at once (offline start: documents with their own `_key`
 * can be stored, HiLo ids once the server is back). It rejects when the
 * server refuses the client, e.g. with `unauthorized`.
 *
 * In Node, where there is no global `WebSocket`, one from the `ws` package is
 * installed on `globalThis`.
 */
export declare function openStore(options: OpenOptions): Promise<Store>;

// Queries, indexes and live queries (query.js; js/README.md, "Queries").

/** A Mango selector: `{field: value}`, `{field: {$op: arg}}`, `$and`, `$or`, `$nor`, `$not`. */
export type Selector = { [fieldOrOperator: string]: unknown };

/** One sort criterion: a field path (ascending) or `{path: 'asc' | 'desc'}`. */
export type SortField = string | { [path: string]: 'asc' | 'desc' };

/** A query in PouchDB's find shape. */
export interface FindQuery {
  /** Which documents; `{}` matches every one. */
  selector: Selector;
  /** The order, then `_id`; without one, the order of the index the planner reads (its fields), or `_id` for a scan. */
  sort?: SortField[];
  /** At most this many documents. */
  limit?: number;
  /** Documents to pass over first (at most 1,048,576; a bookmark pages further). */
  skip?: number;
  /** The fields each document is cut down to; all without. */
  fields?: string[];
  /** An earlier page's `bookmark`: this page starts after its last document. */
  bookmark?: string;
  /** The index to use, by name, where the planner should not choose. */
  use_index?: string;
}

/** A page of a query's documents. */
export interface FindResult<T extends object = Document> {
  docs: Stored<T>[];
  /** Starts the next page (`find` with `bookmark`); absent when the page is not full. */
  bookmark?: string;
}

/** How a query ran ({@link Store.explain}). */
export interface QueryPlan {
  /** The index used; `''` when the collection was scanned. */
  index: string;
  /** The index's fields. */
  fields?: string[];
  /** How many of the index's leading fields the selector fixes by equality. */
  equality: number;
  /** Whether a range of the next field narrowed the read. */
  range: boolean;
  /** Whether the index gave the documents in the query's order (the read stopped once the page was full). */
  sortedByIndex: boolean;
  /** Whether the index was read backwards. */
  descending: boolean;
  /**
   * The order the documents came in, then `_id`: the query's sort, or
   * without one the index's fields (`['done', 'n']`, `['n desc']`); `null`
   * for a scan without a sort (by `_id`).
   */
  sort: string[] | null;
  /** Documents read. */
  examined: number;
  /** Documents the selector took. */
  matched: number;
  /**
   * Present and true when the index's keys proved the selector (equalities
   * on its leading fields, a range of numbers or strings on the next), so
   * no document was checked against it.
   */
  covered?: boolean;
  /**
   * Present when some documents were looked up by id rather than read from
   * the index's entries (entries loaded from a snapshot written before
   * they kept their documents): how many.
   */
  fetched?: number;
  /**
   * Present and true when this query first built the index from the
   * collection's documents: after a reopen whose snapshot did not keep the
   * index's entries.
   */
  built?: boolean;
}

/** An index definition: its fields in order, and a name (else one made from the fields). */
export interface IndexOptions {
  fields: (string | { [field: string]: 'asc' })[];
  name?: string;
}

/** A collection's index, in PouchDB's shape. */
export interface IndexInfo {
  name: string;
  type: 'json';
  def: { fields: { [field: string]: 'asc' }[] };
}

/** One difference between two results of a live query. */
export interface LiveChange<T extends object = Document> {
  /** `added` at `index`; `removed` from `oldIndex`; `changed` in place; `moved` from `oldIndex` to `index`. */
  type: 'added' | 'removed' | 'changed' | 'moved';
  id: string;
  /** Its place in `docs`; -1 when removed. */
  index: number;
  /** Its place in the last result; -1 when added. */
  oldIndex: number;
  /** The document now (`docs[index]`); absent when removed. */
  doc?: Stored<T>;
}

/** A live query's result: all its documents and what changed since the last one. */
export interface LiveResult<T extends object = Document> {
  /**
   * The result's documents, in its order. A document that did not change
   * since the result before is the same object as there: treat them as
   * read-only.
   */
  docs: Stored<T>[];
  changes: LiveChange<T>[];
}

/** A running live query. */
export interface LiveQuery {
  /** Resolves after the first result; rejects (`bad_query`) when the query cannot run. */
  readonly ready: Promise<void>;
  /** Stops it: the callback is not called again. */
  close(): void;
}

export interface Store {
  /** Defines an index of `collection` (kept by every write, replicated to every client of the database). */
  createIndex(collection: string, index: IndexOptions): Promise<{ result: 'created' | 'exists'; name: string }>;
  /** The indexes of `collection`. */
  getIndexes(collection: string): Promise<{ indexes: IndexInfo[] }>;
  /** Drops the index `name` of `collection`; `not_found` when there is none. */
  deleteIndex(collection: string, name: string): Promise<{ ok: true }>;
  /** The page of `collection`'s documents `query` asks for; `bad_query` (1912) when it cannot run. */
  find<T extends object = Document>(collection: string, query: FindQuery): Promise<FindResult<T>>;
  /** Runs `query` and resolves to how it ran: the index it used, what it examined. */
  explain(collection: string, query: FindQuery): Promise<QueryPlan>;
  /** How many documents of `collection` the selector matches (all without one). */
  count(collection: string, options?: { selector?: Selector }): Promise<number>;
  /**
   * Runs `query` over `collection` and keeps running it: `callback` gets the
   * first result, then a new one after every local, other tab's or remote
   * write that changes it.
   */
  watchQuery<T extends object = Document>(collection: string, query: FindQuery, callback: (result: LiveResult<T>) => void): LiveQuery;
}

/** The comparison a session query's `orderBy` sorts with (all the same to hilodb's collation). */
export type OrderingType = 'String' | 'Long' | 'Double' | 'AlphaNumeric';

/** A RavenDB-style query of a session, compiled to one Mango query. */
export interface DocumentQuery<T extends object> {
  whereEquals(field: string, value: unknown): this;
  whereNotEquals(field: string, value: unknown): this;
  whereGreaterThan(field: string, value: unknown): this;
  whereGreaterThanOrEqual(field: string, value: unknown): this;
  whereLessThan(field: string, value: unknown): this;
  whereLessThanOrEqual(field: string, value: unknown): this;
  /** `from <= field <= to`. */
  whereBetween(field: string, from: unknown, to: unknown): this;
  whereIn(field: string, values: unknown[]): this;
  /** The field is a string starting with `prefix` (case-sensitive). */
  whereStartsWith(field: string, prefix: string): this;
  whereExists(field: string): this;
  /** Negates the next condition or subclause. */
  not(): this;
  andAlso(): this;
  orElse(): this;
  openSubclause(): this;
  closeSubclause(): this;
  orderBy(field: string, ordering?: OrderingType): this;
  orderByDescending(field: string, ordering?: OrderingType): this;
  skip(count: number): this;
  take(count: number): this;
  /** Projects the results to these fields: plain objects, not tracked. */
  selectFields<P extends object = Document>(...fields: (string | string[])[]): DocumentQuery<P>;
  /** The Mango query it compiles to. */
  toQuery(): FindQuery;
  all(): Promise<T[]>;
  /** The first result; `not_found` (1202) when there is none. */
  first(): Promise<T>;
  firstOrNull(): Promise<T | null>;
  /** The one result; `not_found` when there is none, `bad_request` when there are more. */
  single(): Promise<T>;
  count(): Promise<number>;
  any(): Promise<boolean>;
}

export interface Session {
  /** A query of a collection's documents, tracked by the session as `load` tracks them. */
  query<T extends object = Document>(options: { collection: string; documentType?: EntityType }): DocumentQuery<T>;
  query<T extends object>(documentType: abstract new (...args: never[]) => T): DocumentQuery<T>;
}
