// The baseline of make bench-edge: a plain JavaScript worker answering
// fixed JSON, in the same workerd as the edge worker.
const BODY = JSON.stringify({ _id: "orders/1-A", _key: "1-A", _rev: "_mfAemNC---B", item: "tea", qty: 2 });

export default {
  fetch() {
    return new Response(BODY, { headers: { "content-type": "application/json; charset=utf-8" } });
  },
};
