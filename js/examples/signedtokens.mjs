// Signed tokens: the app's backend issues a short-lived token with jose,
// the store asks for a fresh one whenever it needs it. Run against a
// server started with -jwt-hs256-file holding HILODB_JWT_SECRET:
// HILODB_AUTH_URL=ws://… HILODB_JWT_SECRET=… node signedtokens.mjs
import { SignJWT } from 'jose';
import { openStore } from 'hilodb';

const secret = new TextEncoder().encode(process.env.HILODB_JWT_SECRET);

// On the backend, after the user signed in: alice writes her own
// database and reads the shared one, for 15 minutes.
async function issueToken(user) {
  return new SignJWT({ hilodb: { db: { 'user-{sub}': 'write', shared: 'read' } } })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(user)
    .setExpirationTime('15m')
    .sign(secret);
}

// In the app: the function is called at start, before the token expires
// and after a refusal (in a browser it would fetch('/api/hilodb-token')).
const store = await openStore({
  url: process.env.HILODB_AUTH_URL,
  database: 'user-alice',
  token: () => issueToken('alice'),
});
const note = await store.put('notes', { text: 'only alice reads this' });
await store.sync();
console.log(await store.pending()); // every write is on the server
console.log(note._id.startsWith('notes/'));
await store.close();

// Bob's token does not open alice's database.
await openStore({ url: process.env.HILODB_AUTH_URL, database: 'user-alice', token: () => issueToken('bob') })
  .catch((err) => console.log(err.code));
// Output:
// 0
// true
// unauthorized
