package store

import (
	"testing"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any of them leaves a goroutine
// running.
func TestMain(m *testing.M) {
	// Calls in flight when a file was found damaged may stay blocked in
	// bbolt on a lock a fault left held (guard.go): not a leak of the
	// calls, which returned.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/mcpsag/router/internal/store.(*txCall).run"))
}

// raw returns the bbolt database of the file in use.
func (d *DB) raw() *bolt.DB { return d.h.Load().bolt }
