// The errors the package rejects with: an Error with a stable code and a
// number (errcode's registry; index.d.ts lists them).

// hiloError returns an Error carrying code and num.
export function hiloError(code, num, message) {
  const err = new Error(message);
  err.code = code;
  err.num = num;
  return err;
}
