package match_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any of them leaves a goroutine
// running. bleve starts a pool of analysis workers in its package init that
// lives as long as the process (bleve.Config's analysis queue); it is not a
// leak of ours, so it is ignored.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"))
}
