// The errors the package rejects with: HiloError, an Error with a stable
// code and a number (errcode's registry; index.d.ts lists them).

/**
 * HiloError is the class of every error the package rejects with or
 * reports: `err instanceof HiloError`, then `err.code` (a stable word such
 * as `not_found`) and `err.num` (1202). The Go side makes its errors with
 * this class too (runtime.js hands it over before Go starts).
 */
export class HiloError extends Error {
  /**
   * @param {string} message
   * @param {string} [code]
   * @param {number} [num]
   */
  constructor(message, code = 'internal', num = 4) {
    super(message);
    this.code = code;
    this.num = num;
  }

  get name() {
    return 'HiloError';
  }
}

// hiloError returns a HiloError carrying code and num.
export function hiloError(code, num, message) {
  return new HiloError(message, code, num);
}
