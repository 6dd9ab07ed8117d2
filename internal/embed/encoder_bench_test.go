package embed_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/embed"
)

// BenchmarkEncoder measures a natively evaluated encoder graph on the
// texts of testdata/encoder-bench.json, with 1 and 2 workers: a 30-word
// task, a 2,000-character task whole (438 tokens with all-MiniLM-L6-v2's
// tokenizer) and cut at 256 tokens, and a batch of 32 skill documents
// (texts/s). MCPSAG_BENCH_ENCODER names the model folder (one the recipe's
// encoder command wrote). The same texts run through onnxruntime give the
// figures to compare with (models/README.md).
func BenchmarkEncoder(b *testing.B) {
	dir := os.Getenv("MCPSAG_BENCH_ENCODER")
	if dir == "" {
		b.Skip("MCPSAG_BENCH_ENCODER is not set: it names a model folder with an encoder graph")
	}
	data, err := os.ReadFile(filepath.Join("testdata", "encoder-bench.json"))
	if err != nil {
		b.Fatal(err)
	}
	var texts struct {
		Task30    string   `json:"task30"`
		Task2000  string   `json:"task2000"`
		Documents []string `json:"documents"`
	}
	if err := json.Unmarshal(data, &texts); err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name      string
		maxTokens int
		texts     []string
	}{
		{"task30", 512, []string{texts.Task30}},
		{"task2000-full", 512, []string{texts.Task2000}},
		{"task2000-256", 256, []string{texts.Task2000}},
		{"documents", 256, texts.Documents},
	}
	ctx := context.Background()
	for _, workers := range []int{1, 2} {
		for _, c := range cases {
			b.Run(fmt.Sprintf("%s/workers=%d", c.name, workers), func(b *testing.B) {
				m, err := embed.Open(ctx, embed.Config{Dir: dir, MaxTokens: c.maxTokens, BatchSize: 32, Workers: workers, Concurrency: 1})
				if err != nil {
					b.Fatal(err)
				}
				defer m.Close()
				if !m.LoadInfo().Native {
					b.Fatalf("%s is not evaluated natively", dir)
				}
				var ds []time.Duration
				cpu := processCPU()
				for b.Loop() {
					t0 := time.Now()
					if _, err := m.Embed(ctx, c.texts, embed.Document); err != nil {
						b.Fatal(err)
					}
					ds = append(ds, time.Since(t0))
				}
				// CPU time tells less than the wall clock on an idle machine,
				// and more on a busy one.
				if cpu := processCPU() - cpu; cpu > 0 {
					b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
				}
				reportPercentiles(b, ds)
				if len(c.texts) > 1 {
					b.ReportMetric(float64(len(c.texts))*float64(b.N)/b.Elapsed().Seconds(), "texts/s")
				}
			})
		}
	}
}
