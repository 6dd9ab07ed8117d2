package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// report is what run prints; its JSON keys are stable.
type report struct {
	Transport string `json:"transport"`
	Method    string `json:"method"`
	Clients   int    `json:"clients"`
	Queries   int    `json:"queries"`
	// Calls are the successful measured calls; Errors the failed ones by
	// code.
	Calls      int            `json:"calls"`
	Errors     map[string]int `json:"errors"`
	Seconds    float64        `json:"seconds"`
	Throughput float64        `json:"calls_per_second"`
	P50        float64        `json:"p50_ms"`
	P90        float64        `json:"p90_ms"`
	P99        float64        `json:"p99_ms"`
	Max        float64        `json:"max_ms"`
	// RSSBefore and RSSAfter are the router's resident memory in bytes,
	// 0 when unknown.
	RSSBefore int64 `json:"rss_before_bytes"`
	RSSAfter  int64 `json:"rss_after_bytes"`
	// Load is the machine's load average over one minute at the end.
	Load float64 `json:"load_average"`
}

func (r *report) setLatencies(lats []time.Duration, elapsed time.Duration) {
	slices.Sort(lats)
	r.Calls = len(lats)
	r.Seconds = elapsed.Seconds()
	if r.Seconds > 0 {
		r.Throughput = float64(len(lats)) / r.Seconds
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	pct := func(p float64) float64 {
		if len(lats) == 0 {
			return 0
		}
		return ms(lats[min(len(lats)-1, int(math.Ceil(p*float64(len(lats))))-1)])
	}
	r.P50, r.P90, r.P99 = pct(0.5), pct(0.9), pct(0.99)
	if len(lats) > 0 {
		r.Max = ms(lats[len(lats)-1])
	}
	r.Load = loadAverage()
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "%s %s, %d clients, %d tasks in turn\n", r.Transport, r.Method, r.Clients, r.Queries)
	fmt.Fprintf(w, "calls      %d in %.1fs: %.0f/s\n", r.Calls, r.Seconds, r.Throughput)
	fmt.Fprintf(w, "latency    p50 %.3f ms  p90 %.3f ms  p99 %.3f ms  max %.3f ms\n", r.P50, r.P90, r.P99, r.Max)
	if len(r.Errors) == 0 {
		fmt.Fprintln(w, "errors     none")
	} else {
		keys := make([]string, 0, len(r.Errors))
		for k := range r.Errors {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", k, r.Errors[k]))
		}
		fmt.Fprintf(w, "errors     %s\n", strings.Join(parts, ", "))
	}
	mib := func(b int64) string {
		if b == 0 {
			return "unknown"
		}
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	fmt.Fprintf(w, "router RSS %s before, %s after\n", mib(r.RSSBefore), mib(r.RSSAfter))
	fmt.Fprintf(w, "load avg   %.2f\n", r.Load)
}

// memoryReader reads a router's resident memory: the sum over pids (from
// /proc), else process_resident_memory_bytes from a /metrics URL.
type memoryReader struct {
	pids       []int
	metricsURL string
}

func (m memoryReader) read(ctx context.Context) int64 {
	if len(m.pids) > 0 {
		var sum int64
		for _, pid := range m.pids {
			sum += rssOf(pid)
		}
		return sum
	}
	if m.metricsURL == "" {
		return 0
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.metricsURL, nil)
	if err != nil {
		return 0
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "process_resident_memory_bytes "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int64(f)
		}
	}
	return 0
}

// rssOf returns a process's resident memory from /proc, 0 when unknown.
func rssOf(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// loadAverage returns the one-minute load average, 0 when unknown.
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
