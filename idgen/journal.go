package idgen

// Ranges is what a HiLo holds leased for one tag, as a Journal keeps it:
// the range in use with its high-water mark, and the ranges held in reserve
// behind it.
type Ranges struct {
	// Current is the range numbers are being taken from; the zero Range
	// when there is none.
	Current Range
	// Mark is the high-water mark of Current: no number of Current above
	// Mark has been handed out. Mark >= Current.High means Current is spent.
	Mark int64
	// Reserve holds ranges leased after Current, in lease order, none of
	// whose numbers has been handed out.
	Reserve []Range
}

// Journal keeps what a HiLo holds leased durable on the client (for
// example in IndexedDB beside the store), so that a generator made after a
// reload goes on from it without a lease, offline as well, and never hands
// out a number twice.
//
// SaveRanges replaces what was saved for tag. It must not return nil before
// rs is durable: a generator hands out a number only once a SaveRanges
// naming it (in Current, at or below Mark) has returned nil, and it swaps a
// reserved range in only through such a call. When SaveRanges fails, the
// previous record must still be there (a write is all or nothing), so that
// the journal never names fewer numbers as handed out than were. The
// generator may keep the Reserve slice it passes; the Journal may too.
//
// A HiLo calls SaveRanges for its tag from one goroutine at a time: at most
// once every JournalStep numbers, when a reserved range is leased, and at
// Close. Generators of different tags sharing a Journal call it
// concurrently. LoadRanges is called once per tag, before the first number;
// ok is false when nothing was saved for tag.
type Journal interface {
	SaveRanges(tag string, rs Ranges) error
	LoadRanges(tag string) (rs Ranges, ok bool, err error)
}
