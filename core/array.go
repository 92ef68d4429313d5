package core

import (
	"context"
	"fmt"

	"github.com/hilodb/hilodb/core/keygen"
	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/internal/jsontext"
)

// InsertArray is InsertMany with the documents given as the elements of
// one JSON array text, at most max of them (0: no limit). Each document is
// read once, both to find where it ends and to check it as InsertMany
// does, where splitting the array first would read every document twice.
// An element that is not a valid JSON object gets its error in its result,
// as in InsertMany; text that is not a JSON array of such elements (its
// brackets, commas or strings broken) fails the call with ErrBadJSON, and
// more than max elements with ErrBadParameter, before anything is written.
// text must not be written to while InsertArray runs; the stored
// documents do not refer to it.
func (s *Store) InsertArray(ctx context.Context, collection string, text []byte, max int, opts *WriteOptions) ([]Result, error) {
	g, err := s.collectionGen(collection)
	if err != nil {
		return nil, err
	}
	if _, err := opts.overwrite(); err != nil {
		return nil, err
	}
	slab, err := s.scanArray(collection, g, text, max, opts)
	if err != nil {
		return nil, err
	}
	// The ids once every document is read: the HiLo then knows how many
	// the batch takes, one lease and one journal write per range.
	ctx = idgen.WithDemand(ctx, len(slab))
	s.takeIDs(ctx, slab, collection, g)
	ws := make([]*write, len(slab))
	for i := range slab {
		ws[i] = &slab[i]
	}
	return s.run(ctx, ws, false)
}

// idBatcher is an IDSource that hands out many HiLo ids of a tag in one
// call (idgen.Generator.NextIDs).
type idBatcher interface {
	NextIDs(ctx context.Context, tag string, ids []string) (int, error)
}

// takeIDs takes the generated ids of the writes that need one (genID), in
// their order: HiLo ids in one call when the id source can give them so,
// else one at a time (takeID).
func (s *Store) takeIDs(ctx context.Context, slab []write, coll string, g keygen.Generator) {
	b, ok := s.ids.(idBatcher)
	if !ok || g.Type != keygen.HiLo || coll == EmptyCollection || s.sep != "/" && s.nums != nil {
		for i := range slab {
			if slab[i].genID {
				s.takeID(ctx, &slab[i], coll, g)
			}
		}
		return
	}
	need := 0
	for i := range slab {
		if slab[i].genID {
			need++
		}
	}
	if need == 0 {
		return
	}
	ids := make([]string, need)
	got, err := b.NextIDs(ctx, s.conv.IDPrefix(coll), ids)
	k := 0
	for i := range slab {
		w := &slab[i]
		if !w.genID {
			continue
		}
		w.genID = false
		if k < got {
			w.id = ids[k]
		} else {
			w.err = AsError(fmt.Errorf("generate id: %w", err))
		}
		k++
	}
}

// idPreparer is an IDSource that can ready itself, in the background,
// for a bulk write about to take about want ids of tag
// (idgen.Generator.Prepare).
type idPreparer interface {
	Prepare(tag string, want int)
}

// prepareIDs has the id source get ready for a bulk write of about n
// documents when the first of them is to get a HiLo id: it then leases and
// journals what the write needs while the documents are read. scanArray
// guesses n from the size of the first few (at most the call's limit): a
// guess too high leaves numbers in the range for later writes (and, should
// the process die, skips them), one too low leaves the rest to the write's
// own takes.
func (s *Store) prepareIDs(coll string, g keygen.Generator, first *write, n int) {
	p, ok := s.ids.(idPreparer)
	if !ok || !first.genID || g.Type != keygen.HiLo || coll == EmptyCollection {
		return
	}
	p.Prepare(s.conv.IDPrefix(coll), n)
}

// prepareSample is how many documents scanArray reads to guess how many a
// bulk write holds (prepareIDs).
const prepareSample = 8

// notArray is InsertArray's error for text that is not a JSON array.
func notArray(at int) *Error {
	return newError(ErrBadJSON, "", "", "malformed JSON: the documents must be a JSON array (at offset %d)", at)
}

// scanArray reads the elements of the array text into writes resolved as
// InsertMany's, without their generated ids (genID). Once it has read a
// few, it has the id source get ready for the rest (prepareIDs).
func (s *Store) scanArray(coll string, g keygen.Generator, text []byte, max int, opts *WriteOptions) ([]write, error) {
	i := jsontext.SkipSpace(text, 0)
	if i >= len(text) || text[i] != '[' {
		return nil, notArray(i)
	}
	i = jsontext.SkipSpace(text, i+1)
	if i < len(text) && text[i] == ']' {
		if jsontext.SkipSpace(text, i+1) != len(text) {
			return nil, notArray(i + 1)
		}
		return nil, nil
	}
	start := i
	var slab []write
	for {
		if max > 0 && len(slab) == max {
			return nil, newError(ErrBadParameter, "", "", "too many documents: at most %d in one call", max)
		}
		var a sysAttrs
		var e *Error
		end := -1
		if i < len(text) && text[i] == '{' {
			a, end, e = scanElement(text, i)
		} else {
			e = newError(ErrBadJSON, "", "", "malformed JSON: a document must be a JSON object")
		}
		if end < 0 {
			// Not a valid object: where it ends by its brackets and strings.
			var ok bool
			if end, ok = jsontext.SkipValue(text, i); !ok || end == i {
				return nil, notArray(i)
			}
		}
		if slab == nil {
			// Room for as many elements as the first one's size suggests:
			// a bulk write's documents are often alike.
			n := len(text)/(end-i+1) + 16
			if max > 0 {
				n = min(n, max)
			}
			slab = make([]write, 0, n)
		}
		slab = append(slab, write{})
		s.resolveInsert(&slab[len(slab)-1], coll, g, text[i:end:end], a, e, opts)
		i = jsontext.SkipSpace(text, end)
		if i >= len(text) {
			return nil, notArray(i)
		}
		switch text[i] {
		case ',':
			i = jsontext.SkipSpace(text, i+1)
			if len(slab) == prepareSample {
				// As many more as their share of the text.
				n := len(text) * len(slab) / (i - start)
				if max > 0 {
					n = min(n, max)
				}
				s.prepareIDs(coll, g, &slab[0], n)
			}
		case ']':
			if jsontext.SkipSpace(text, i+1) != len(text) {
				return nil, notArray(i + 1)
			}
			if len(slab) <= prepareSample { // not prepared yet: as many as there are
				s.prepareIDs(coll, g, &slab[0], len(slab))
			}
			return slab, nil
		default:
			return nil, notArray(i)
		}
	}
}
