package syncserver

import "sync"

// hub wakes the live subscribers of a database after accepted writes. A
// wake-up is a signal, not data: each subscriber pulls from its own
// checkpoint, so a slow one never holds up the others or piles up memory.
type hub struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

func newHub() *hub { return &hub{subs: make(map[string]map[chan struct{}]struct{})} }

func (h *hub) add(db string) chan struct{} {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs[db] == nil {
		h.subs[db] = make(map[chan struct{}]struct{})
	}
	h.subs[db][ch] = struct{}{}
	h.mu.Unlock()
	return ch
}

func (h *hub) remove(db string, ch chan struct{}) {
	h.mu.Lock()
	delete(h.subs[db], ch)
	h.mu.Unlock()
}

func (h *hub) notify(db string) {
	h.mu.Lock()
	for ch := range h.subs[db] {
		select {
		case ch <- struct{}{}:
		default: // already signalled
		}
	}
	h.mu.Unlock()
}

// notifyAll wakes the subscribers of every database.
func (h *hub) notifyAll() {
	h.mu.Lock()
	for _, subs := range h.subs {
		for ch := range subs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	h.mu.Unlock()
}
