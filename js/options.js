// The options of openStore and put, checked: an unknown option is an
// error, never ignored.

import { hiloError } from './errors.js';

// putOptions are the options put takes.
const putOptions = new Set(['rev', 'ifMatch', 'ignoreRevs']);

// openOptions are the options openStore takes.
export const openOptions = ['url', 'urls', 'database', 'token', 'node', 'sync', 'onConflict', 'persist', 'reserve', 'durability', 'requestTimeout', 'heartbeat', 'shared', 'changeFeed'];

// knownOptions returns options ({} for none) after checking that each of
// its names is one of known: unknown options are an error, never ignored.
export function knownOptions(op, options, known) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object') throw hiloError('bad_request', 400, `${op}: options must be an object`);
  for (const k of Object.keys(options)) {
    if (!known.includes(k)) throw hiloError('bad_request', 400, `${op}: unknown option ${JSON.stringify(k)}; want ${known.join(' or ')}`);
  }
  return options;
}

// withRevOptions applies put's options to doc: rev (or ifMatch) becomes its
// _rev, ignoreRevs drops it. Unknown options are an error, never ignored.
export function withRevOptions(doc, options) {
  if (options === undefined || options === null) return doc;
  if (typeof options !== 'object') throw hiloError('bad_request', 400, 'put: options must be an object');
  for (const k of Object.keys(options)) {
    if (!putOptions.has(k)) throw hiloError('bad_request', 400, `put: unknown option ${JSON.stringify(k)}; want rev, ifMatch or ignoreRevs`);
  }
  const rev = options.rev ?? options.ifMatch;
  if (rev !== undefined && typeof rev !== 'string') throw hiloError('bad_request', 400, 'put: rev must be a string');
  if (options.ignoreRevs !== undefined && typeof options.ignoreRevs !== 'boolean') throw hiloError('bad_request', 400, 'put: ignoreRevs must be true or false');
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return doc; // rejected as it is
  const out = { ...doc };
  if (options.ignoreRevs) delete out._rev;
  if (rev !== undefined) out._rev = rev;
  return out;
}
