package store

import (
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mcpsag/router/internal/statedir"
)

// TestAnotherReleaseIsNamed: a cache that a newer release wrote, whose
// schema or records version this release does not write, is said to be
// that release's, by the name it recorded; the file then records this
// release.
func TestAnotherReleaseIsNamed(t *testing.T) {
	open := func(t *testing.T, dir, release string) *DB {
		t.Helper()
		db, err := Open(dir, Options{LockTimeout: 200 * time.Millisecond, Release: release})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	for _, tc := range []struct {
		name, key, value string
		said             func(*DB) string
	}{
		{"schema", string(keySchemaVersion), strconv.Itoa(statedir.CacheSchema + 1), func(db *DB) string { return db.Recovered }},
		{"records", string(keyRecordsVersion), strconv.Itoa(statedir.RecordFormat+1) + ".1", func(db *DB) string { return db.Reparse }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := open(t, dir, "v2.0.0")
			if err := db.raw().Update(func(tx *bolt.Tx) error {
				if err := tx.Bucket(bucketFiles).Put([]byte("/skills/a/SKILL.md"), []byte("x")); err != nil {
					return err
				}
				return tx.Bucket(bucketMeta).Put([]byte(tc.key), []byte(tc.value))
			}); err != nil {
				t.Fatal(err)
			}
			must(t, db.Close())

			db = open(t, dir, "v1.0.0")
			defer db.Close()
			if got, want := tc.said(db), "written by a newer release (v2.0.0)"; !strings.Contains(got, want) {
				t.Errorf("the older release said %q, want it to contain %q", got, want)
			}
			var recorded string
			if err := db.raw().View(func(tx *bolt.Tx) error {
				recorded = string(tx.Bucket(bucketMeta).Get(keyWrittenBy))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if recorded != "v1.0.0" {
				t.Errorf("written_by after the older release's open = %q, want v1.0.0", recorded)
			}
		})
	}
}
