package embed

import (
	"container/list"
	"slices"
	"sync"
)

// lru is a bounded, least-recently-used cache of vectors keyed by text. It
// is safe for concurrent use. Vectors are copied in and out, so callers may
// modify what they get.
type lru struct {
	mu    sync.Mutex
	max   int
	order *list.List // front = most recently used; values are *lruEntry
	items map[string]*list.Element
}

type lruEntry struct {
	key string
	vec []float32
}

// newLRU returns a cache of at most max entries; nil if max <= 0. A nil
// *lru is a valid cache that holds nothing.
func newLRU(max int) *lru {
	if max <= 0 {
		return nil
	}
	return &lru{max: max, order: list.New(), items: map[string]*list.Element{}}
}

func (c *lru) get(key string) ([]float32, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return slices.Clone(e.Value.(*lruEntry).vec), true
}

func (c *lru) put(key string, vec []float32) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		e.Value.(*lruEntry).vec = slices.Clone(vec)
		c.order.MoveToFront(e)
		return
	}
	c.items[key] = c.order.PushFront(&lruEntry{key: key, vec: slices.Clone(vec)})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*lruEntry).key)
	}
}

func (c *lru) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
