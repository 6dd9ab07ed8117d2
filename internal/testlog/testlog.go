// Package testlog captures log output in tests. A Buffer takes the concurrent
// writes of a running router's loggers and reads back the text or its JSON
// records.
package testlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// Buffer is a goroutine-safe log sink.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Reset drops everything written so far.
func (b *Buffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.Reset()
}

// Records decodes the output of a JSON handler, one record a line.
func (b *Buffer) Records() ([]map[string]any, error) {
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			return nil, fmt.Errorf("log line %q: %w", line, err)
		}
		out = append(out, m)
	}
	return out, nil
}
