// Type declarations for the hilodb npm package.

/** Options for {@link openStore}. */
export interface OpenOptions {
  /** The sync server's websocket endpoint, e.g. `ws://localhost:8080/v1/sync`. */
  url: string;
  /** The database on the server; created on first use. */
  database: string;
  /** The token that authorizes this client for `database`, if the server wants one. */
  token?: string;
  /**
   * The node tag this client was given before (see {@link StoreInfo.node}),
   * to keep it across sessions; leave it out to be given a new one.
   */
  node?: string;
  /**
   * `true` replicates live for the store's lifetime: local writes are pushed
   * as they are made, changes of other clients arrive as the server streams
   * them, and a lost connection is retried with backoff (errors go to the
   * `'error'` event). `close()` stops it. Default `false`: replicate with
   * {@link Store.sync}.
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
   * opens the same name: it runs once, in a SharedWorker, off the main
   * thread, and each tab's store talks to it. A write in one tab is read at
   * once in every tab and fires `'change'` there; sync runs once per
   * origin; the store lives while one tab has it open. Elsewhere (Node, a
   * worker, or `shared: false`) only one store may use a name at a time: a
   * second one rejects with `locked` (423).
   *
   * A write (`put`, `delete`) resolves only once it is durable there: a
   * killed tab, browser or process cannot take it back. Each write appends a
   * record to a log (concurrent writes share one storage commit), which is
   * compacted into a snapshot in the background, so a write costs what it
   * changes, not what the store holds.
   */
  persist?: string;
  /**
   * With `persist`: `'strict'` (default) resolves a write once it is
   * durable; `'relaxed'` resolves it at once and makes it durable moments
   * later, so a crash can lose the last writes that resolved. `flush()`
   * waits for them.
   */
  durability?: 'strict' | 'relaxed';
  /**
   * With `persist` in a browser page: `false` opens the store in this page
   * alone (another tab then gets `locked`) instead of sharing it with every
   * tab through a SharedWorker (the default). A shared store takes
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
   * (default 10,000), so a dead one is noticed without a call.
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
   * it is lost or stops answering (a call gets no reply within 15 seconds,
   * or a heartbeat ping none within 10 plus 15), `'syncing'` while a sync
   * round runs. `info().connected` agrees with it.
   */
  status: StatusEvent;
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
export interface StoreInfo {
  /** This client's node tag, given by the server; a local stand-in before the first connect. */
  node: string;
  /** The server's node tag, the suffix of HiLo ids (`orders/1-A`); empty before the first connect. */
  serverTag: string;
  /** Whether a connection to the server is up now. */
  connected: boolean;
}

/**
 * The error every rejected Promise of this package carries.
 *
 * Codes are stable words, among them: `illegal_key` (1221), `illegal_name`
 * (1208), `not_found` (1202), `bad_json` (600), `conflict` (1200),
 * `unauthorized` (401), `rate_limited` (429), `needs_server` (1900: the
 * server is needed and cannot be reached), `closed` (503: the store was
 * closed), `unavailable` (503), `bad_request` (400), `internal` (4),
 * `locked` (423: the persisted store is open elsewhere), `merge_failed`
 * (1201: the merge function failed; error events only), `rejected` (600:
 * the server refused a local write; it stays pending).
 */
export interface HiloError extends Error {
  /** A stable word naming the error, e.g. `"illegal_key"`. */
  code: string;
  /** The error number, e.g. 1221. */
  num: number;
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

/** A document store. Every method returns a Promise that rejects with a {@link HiloError}. */
export declare class Store {
  private constructor();
  /**
   * Stores `doc` in `collection` and resolves to the stored document. Its id
   * comes from `doc._id`, else `doc._key`, else a HiLo id such as
   * `orders/1-A`, handed out locally from a number range leased from the
   * server. A `_rev` in `doc` (or `options.rev`) is a precondition against
   * lost updates: a stale or made-up one rejects with `conflict` (1200) and
   * changes nothing.
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
  /**
   * Resolves to up to `limit` (1 to 10,000, default 100) documents of
   * `collection` — those whose `_id` is the collection's prefix, `/` and a
   * key — in key order (by `_id`, as strings), after the `_id` `after`.
   * `next` is the cursor for the following page, `null` after the last.
   */
  list<T extends object = Document>(collection: string, options?: { limit?: number; after?: string | null }): Promise<{ docs: Stored<T>[]; next: string | null }>;
  /** Resolves to the document with the given `_id`; rejects with `not_found` (1202) when there is none. */
  get<T extends object = Document>(id: string): Promise<Stored<T>>;
  /** Removes the document with the given `_id`; rejects with `not_found` (1202) when there is none. */
  delete(id: string): Promise<void>;
  /** Resolves to this store's node tag, the server's tag and the connection state. */
  info(): Promise<StoreInfo>;
  /**
   * One replication round: pushes every pending local write, then pulls every
   * change of other clients. Conflicts are settled by the store's
   * {@link OpenOptions.onConflict} policy. Rejects with `needs_server` when
   * the server cannot be reached (the writes stay pending).
   */
  sync(): Promise<SyncResult>;
  /** Resolves to the number of documents with local writes the server has not acknowledged. */
  pending(): Promise<number>;
  /** Resolves to the losing versions kept for `id`, oldest first. */
  conflicts<T extends object = Document>(id: string): Promise<Version<T>[]>;
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
   * Stops live replication (pushing what is pending, for at most a few
   * seconds, when online), waits for a persisted store's relaxed writes, gives unused ids back to
   * the server (a persisted store keeps them for the next session) and closes
   * the connection and the store. Calls after it reject with `closed`.
   */
  close(): Promise<void>;
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
