// RavenDB's session query (the ravendb package's IDocumentQuery names):
// session.query({collection}) or session.query(Class), built with where…,
// not, andAlso, orElse, subclauses, orderBy, skip and take, then run with
// all, first, single, count or any. It compiles to one Mango query (toQuery)
// that the store's find runs; the documents come back tracked by the
// session, as session.load's do.

/**
 * DocumentQuery is one query of a session's collection. Its methods add to
 * it and return it; the ones that run it return Promises.
 */
export class DocumentQuery {
  #run; // {find(query), count(selector), track(doc), idProperty, collection: Promise<string>}
  #hiloError;
  #items = []; // conditions, 'and', 'or', 'not', '(' and ')', in the order written
  #sort = [];
  #skip = 0;
  #take;
  #fields;

  /** @internal Use session.query. */
  constructor(run, hiloError) {
    this.#run = run;
    this.#hiloError = hiloError;
  }

  #field(name) {
    if (typeof name !== 'string' || name === '') throw this.#hiloError('bad_query', 1912, 'query: a field name must be a non-empty string');
    return name === this.#run.idProperty ? '_id' : name;
  }

  #where(field, cond) {
    this.#items.push({ [this.#field(field)]: cond });
    return this;
  }

  /** field equals value. */
  whereEquals(field, value) {
    return this.#where(field, { $eq: value });
  }

  /** field does not equal value (a document without the field matches). */
  whereNotEquals(field, value) {
    return this.#where(field, { $ne: value });
  }

  whereGreaterThan(field, value) {
    return this.#where(field, { $gt: value });
  }

  whereGreaterThanOrEqual(field, value) {
    return this.#where(field, { $gte: value });
  }

  whereLessThan(field, value) {
    return this.#where(field, { $lt: value });
  }

  whereLessThanOrEqual(field, value) {
    return this.#where(field, { $lte: value });
  }

  /** from <= field <= to. */
  whereBetween(field, from, to) {
    return this.#where(field, { $gte: from, $lte: to });
  }

  /** field equals one of values. */
  whereIn(field, values) {
    if (!Array.isArray(values)) throw this.#hiloError('bad_query', 1912, 'whereIn: values must be an array');
    return this.#where(field, { $in: values });
  }

  /** field is a string that starts with prefix (case-sensitive). */
  whereStartsWith(field, prefix) {
    if (typeof prefix !== 'string') throw this.#hiloError('bad_query', 1912, 'whereStartsWith: prefix must be a string');
    return this.#where(field, { $regex: `^${prefix.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}` });
  }

  /** field is present (null included). */
  whereExists(field) {
    return this.#where(field, { $exists: true });
  }

  /** Negates the next condition or subclause. */
  not() {
    this.#items.push('not');
    return this;
  }

  /** Joins the next condition with AND (the default). */
  andAlso() {
    this.#items.push('and');
    return this;
  }

  /** Joins the next condition with OR. */
  orElse() {
    this.#items.push('or');
    return this;
  }

  openSubclause() {
    this.#items.push('(');
    return this;
  }

  closeSubclause() {
    this.#items.push(')');
    return this;
  }

  /** Sorts by field, ascending; ordering is accepted for RavenDB's sake (one collation orders every type). */
  orderBy(field, ordering) {
    void ordering;
    this.#sort.push({ [this.#field(field)]: 'asc' });
    return this;
  }

  orderByDescending(field, ordering) {
    void ordering;
    this.#sort.push({ [this.#field(field)]: 'desc' });
    return this;
  }

  skip(count) {
    if (!Number.isSafeInteger(count) || count < 0) throw this.#hiloError('bad_query', 1912, 'skip: want a whole number of 0 or more');
    this.#skip = count;
    return this;
  }

  take(count) {
    if (!Number.isSafeInteger(count) || count < 0) throw this.#hiloError('bad_query', 1912, 'take: want a whole number of 0 or more');
    this.#take = count;
    return this;
  }

  /** Projects the results to fields: plain objects, not tracked by the session. */
  selectFields(...fields) {
    this.#fields = fields.flat().map((f) => this.#field(f));
    return this;
  }

  /** The Mango query this compiles to: {selector, sort?, skip?, limit?, fields?}. */
  toQuery() {
    const q = { selector: this.#selector() };
    if (this.#sort.length > 0) q.sort = [...this.#sort];
    if (this.#skip > 0) q.skip = this.#skip;
    if (this.#take !== undefined) q.limit = this.#take;
    if (this.#fields) q.fields = [...this.#fields];
    return q;
  }

  // selector parses the items: OR binds looser than AND, which joins two
  // conditions written one after the other; NOT takes the next condition
  // or subclause.
  #selector() {
    const items = this.#items;
    let i = 0;
    const fail = (msg) => this.#hiloError('bad_query', 1912, `query: ${msg}`);
    const or = () => {
      const terms = [and()];
      while (items[i] === 'or') {
        i++;
        terms.push(and());
      }
      return terms.length === 1 ? terms[0] : { $or: terms };
    };
    const and = () => {
      const terms = [unary()];
      for (;;) {
        if (items[i] === 'and') i++;
        else if (i >= items.length || items[i] === 'or' || items[i] === ')') break;
        terms.push(unary());
      }
      return terms.length === 1 ? terms[0] : { $and: terms };
    };
    const unary = () => {
      const it = items[i++];
      if (it === 'not') return { $not: unary() };
      if (it === '(') {
        const inner = or();
        if (items[i++] !== ')') throw fail('openSubclause without closeSubclause');
        return inner;
      }
      if (it === undefined) throw fail('andAlso, orElse or not with no condition after it');
      if (typeof it === 'string') throw fail(`${it === ')' ? 'closeSubclause' : it} where a condition should come`);
      return it;
    };
    if (items.length === 0) return {};
    const sel = or();
    if (i < items.length) throw fail('closeSubclause without openSubclause');
    return sel;
  }

  /** Resolves to every result. */
  async all() {
    return this.#results(this.toQuery());
  }

  /** Resolves to the first result; not_found (1202) when there is none. */
  async first() {
    const r = await this.firstOrNull();
    if (r === null) throw this.#hiloError('not_found', 1202, 'first: the query has no results');
    return r;
  }

  /** Resolves to the first result, or null. */
  async firstOrNull() {
    const [r] = await this.#results({ ...this.toQuery(), limit: 1 });
    return r ?? null;
  }

  /** Resolves to the one result; not_found when there is none, bad_request when there are more. */
  async single() {
    const rs = await this.#results({ ...this.toQuery(), limit: 2 });
    if (rs.length === 0) throw this.#hiloError('not_found', 1202, 'single: the query has no results');
    if (rs.length > 1) throw this.#hiloError('bad_request', 400, 'single: the query has more than one result');
    return rs[0];
  }

  /** Resolves to how many documents the query's conditions match. */
  async count() {
    const q = this.toQuery();
    return this.#run.count(await this.#run.collection, { selector: q.selector });
  }

  /** Resolves to whether any document matches. */
  async any() {
    const q = this.toQuery();
    const { docs } = await this.#run.find(await this.#run.collection, { selector: q.selector, limit: 1, fields: ['_id'] });
    return docs.length > 0;
  }

  async #results(q) {
    const { docs } = await this.#run.find(await this.#run.collection, q);
    if (q.fields) {
      const idProp = this.#run.idProperty;
      return docs.map((d) => {
        if (idProp && '_id' in d) {
          const { _id, ...rest } = d;
          return { ...rest, [idProp]: _id };
        }
        return d;
      });
    }
    return docs.map((d) => this.#run.track(d)).filter((e) => e !== null); // deleted in the session: left out
  }
}
