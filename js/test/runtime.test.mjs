// reuseCallObjects (runtime.js): every call of a Go function from
// JavaScript hands Go one event object and one argument array per
// function, and lets go of the call's arguments once it returns. The Go
// side here is a stand-in that does what syscall/js's handleEvent does:
// take the pending event, read this and every argument, run the function
// (which may call back into JavaScript, and so into Go again), then set
// the result.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { reuseCallObjects, growHeadroom } from '../runtime.js';

// fakeGo runs handlers[id](this, args) for a call of the function with id.
function fakeGo(handlers) {
  const go = {
    _pendingEvent: null,
    events: new Set(), // every event object Go was handed
    _makeFuncWrapper(id) {
      throw new Error(`replaced, not called (${id})`);
    },
    _resume() {
      const ev = go._pendingEvent;
      go._pendingEvent = null;
      go.events.add(ev);
      const self = ev.this;
      const args = Array.from({ length: ev.args.length }, (_, i) => ev.args[i]);
      ev.result = handlers[ev.id](self, args);
    },
  };
  return go;
}

describe('reuseCallObjects', () => {
  test('a call gets its own this and arguments and returns its own result, also when made inside another', () => {
    let f;
    const go = fakeGo({
      1: (self, args) => {
        if (args[0] === 'outer') {
          const inner = f.call({ name: 'inner-this' }, 'inner', 2);
          return `${self.name}:${args.join(',')}|${inner}`;
        }
        return `${self.name}:${args.join(',')}`;
      },
    });
    reuseCallObjects(go);
    f = go._makeFuncWrapper(1);
    assert.equal(f.call({ name: 'outer-this' }, 'outer', 1, 'x'), 'outer-this:outer,1,x|inner-this:inner,2');
    assert.equal(f.call({ name: 'again' }), 'again:');
    assert.equal(go.events.size, 1, 'one event object for every call of the function');
  });

  test('the event holds nothing of a call once it returned', () => {
    const go = fakeGo({ 7: () => ({ big: 'result' }) });
    reuseCallObjects(go);
    const f = go._makeFuncWrapper(7);
    assert.deepEqual(f.call({}, { big: 'argument' }), { big: 'result' });
    const [ev] = go.events;
    assert.equal(ev.args.length, 0);
    assert.equal(ev.this, undefined);
    assert.equal(ev.result, undefined);
  });

  test('a call that throws (the Go program has exited) holds nothing either', () => {
    const go = fakeGo({});
    go._resume = () => {
      go.events.add(go._pendingEvent);
      throw new Error('Go program has already exited');
    };
    reuseCallObjects(go);
    const f = go._makeFuncWrapper(3);
    assert.throws(() => f.call({}, 'x'), /already exited/);
    const [ev] = go.events;
    assert.equal(ev.args.length, 0);
    assert.equal(ev.this, undefined);
  });

  test('functions keep apart', () => {
    const go = fakeGo({ 1: (_, a) => `one ${a[0]}`, 2: (_, a) => `two ${a[0]}` });
    reuseCallObjects(go);
    const one = go._makeFuncWrapper(1);
    const two = go._makeFuncWrapper(2);
    assert.equal(one('a'), 'one a');
    assert.equal(two('b'), 'two b');
    assert.equal(go.events.size, 2);
  });

  test('a Go runtime whose wrapper maker it does not know is left as it is', () => {
    const maker = (id, extra) => [id, extra];
    const go = { _makeFuncWrapper: maker };
    reuseCallObjects(go);
    assert.equal(go._makeFuncWrapper, maker);
  });
});

describe('growHeadroom', () => {
  test('grows the memory by the collector headroom, every byte of it zero', () => {
    const mem = new WebAssembly.Memory({ initial: 2, maximum: 4096 });
    new Uint8Array(mem.buffer).fill(7); // what was there stays
    growHeadroom(mem);
    assert.equal(mem.buffer.byteLength, 2 * 65536 + (32 << 20));
    const u8 = new Uint8Array(mem.buffer);
    assert.equal(u8[2 * 65536 - 1], 7);
    assert.equal(
      u8.subarray(2 * 65536).findIndex((b) => b !== 0),
      -1,
    );
  });

  test('a memory that cannot grow so far is left as it is', () => {
    const mem = new WebAssembly.Memory({ initial: 1, maximum: 100 });
    growHeadroom(mem);
    assert.equal(mem.buffer.byteLength, 65536);
  });

  test('a module without a memory is left alone', () => {
    assert.doesNotThrow(() => growHeadroom(undefined));
  });
});
