package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
	// RouterCPU is the CPU time the router used while the calls were
	// measured, in seconds, and RouterCPUPerCall that per call made
	// (successful or not), in ms; both 0 when unknown. On a machine the
	// router shares with the load generator, CPU per call moves less with
	// the load than calls per second do.
	RouterCPU        float64 `json:"router_cpu_seconds"`
	RouterCPUPerCall float64 `json:"router_cpu_ms_per_call"`
	// BenchCPUPerCall is the load generator's own CPU per call, in ms: what
	// it takes from the router when they share a machine.
	BenchCPUPerCall float64 `json:"bench_cpu_ms_per_call"`
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

// output writes rep to w: one indented JSON document when asJSON, else
// the report's text.
func output(w io.Writer, asJSON bool, rep interface{ print(io.Writer) }) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.print(w)
	return nil
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
	router := "unknown"
	if r.RouterCPU > 0 {
		router = fmt.Sprintf("%.3f ms per call (%.1f s)", r.RouterCPUPerCall, r.RouterCPU)
	}
	fmt.Fprintf(w, "CPU        router %s, load generator %.3f ms per call\n", router, r.BenchCPUPerCall)
	fmt.Fprintf(w, "load avg   %.2f\n", r.Load)
}

// routerGauges reads a router's resident memory and CPU time: summed
// over pids (from /proc), else process_resident_memory_bytes and
// process_cpu_seconds_total from a /metrics URL.
type routerGauges struct {
	pids       []int
	metricsURL string
}

// rss returns the router's resident memory in bytes, 0 when unknown.
func (p routerGauges) rss(ctx context.Context) int64 {
	if len(p.pids) > 0 {
		return sumOver(p.pids, rssOf)
	}
	return int64(p.metric(ctx, "process_resident_memory_bytes"))
}

// cpu returns the CPU time the router has used in seconds, 0 when unknown.
func (p routerGauges) cpu(ctx context.Context) float64 {
	if len(p.pids) > 0 {
		return sumOver(p.pids, cpuOf)
	}
	return p.metric(ctx, "process_cpu_seconds_total")
}

// sumOver adds up what of returns for each process.
func sumOver[T int64 | float64](pids []int, of func(pid int) T) T {
	var sum T
	for _, pid := range pids {
		sum += of(pid)
	}
	return sum
}

// metric returns the value of an unlabelled metric of the /metrics URL, 0
// when there is none.
func (p routerGauges) metric(ctx context.Context, name string) float64 {
	if p.metricsURL == "" {
		return 0
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.metricsURL, nil)
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
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}

// userHZ is the unit of the CPU times in /proc/<pid>/stat on Linux.
const userHZ = 100

// cpuOf returns the user and system CPU time of a process and its threads
// from /proc, in seconds; 0 when unknown.
func cpuOf(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: the fields that
	// follow start after the last ')', with the state (field 3).
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return (utime + stime) / userHZ
}

// selfCPU returns the CPU time this process has used, in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
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
