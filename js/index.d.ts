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
 * closed), `unavailable` (503), `bad_request` (400), `internal` (4).
 */
export interface HiloError extends Error {
  /** A stable word naming the error, e.g. `"illegal_key"`. */
  code: string;
  /** The error number, e.g. 1221. */
  num: number;
}

/** A document store. Every method returns a Promise that rejects with a {@link HiloError}. */
export declare class Store {
  private constructor();
  /**
   * Stores `doc` in `collection` and resolves to the stored document. Its id
   * comes from `doc._id`, else `doc._key`, else a HiLo id such as
   * `orders/1-A`, handed out locally from a number range leased from the
   * server.
   */
  put<T extends object = Document>(collection: string, doc: T): Promise<Stored<T>>;
  /** Resolves to the document with the given `_id`; rejects with `not_found` (1202) when there is none. */
  get<T extends object = Document>(id: string): Promise<Stored<T>>;
  /** Removes the document with the given `_id`; rejects with `not_found` (1202) when there is none. */
  delete(id: string): Promise<void>;
  /** Resolves to this store's node tag, the server's tag and the connection state. */
  info(): Promise<StoreInfo>;
  /** Gives unused ids back to the server and closes the connection and the store. Calls after it reject with `closed`. */
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
