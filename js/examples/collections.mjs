// ArangoDB-style collections with keyOptions, options and result shapes as
// in arangojs. Run: HILODB_URL=ws://… node collections.mjs
import { openStore } from 'hilodb';

const store = await openStore({ url: process.env.HILODB_URL, database: `coll${Date.now()}` });
const users = await store.createCollection('users', { keyOptions: { type: 'autoincrement', increment: 5, offset: 10 } });
const ann = await users.save({ name: 'ann' });
console.log(ann._id);
const bob = await users.save({ name: 'bob' }, { returnNew: true });
console.log(bob._key, bob.new.name);
const updated = await users.update('10', { age: 30 }, { returnNew: true, ifMatch: ann._rev });
console.log(updated._oldRev === ann._rev, updated.new.age);
const docs = await users.documents(['10', 'nobody']);
console.log(docs[0].name, docs[1].errorNum);
console.log((await users.count()).count);
await store.close();
// Output:
// users/10
// 15 bob
// true 30
// ann 1202
// 2
