package telemetry

import (
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/otlptranslator"
	"google.golang.org/protobuf/proto"
)

// instrument is a counter or histogram declared up front, so that /metrics
// serves it from the start: an OTel instrument appears on /metrics only
// once it records something, and a dashboard panel over a counter that has
// not fired would show "No data" instead of 0.
type instrument struct {
	name, unit, help, scope string
	histogram               bool
}

// zeroFill serves, beside the metrics a registry gathers, a zero series for
// every declared instrument that has no series yet (a counter at 0, a
// histogram of no observations), labelled only with its instrumentation
// scope. Once the instrument records, its real series replace the zero one.
type zeroFill struct {
	next prometheus.Gatherer

	mu       sync.Mutex
	declared []*dto.MetricFamily
}

// declare adds instruments to fill.
func (z *zeroFill) declare(ins ...instrument) {
	namer := otlptranslator.NewMetricNamer("", TranslationStrategy)
	z.mu.Lock()
	defer z.mu.Unlock()
	for _, in := range ins {
		var typ otlptranslator.MetricType = otlptranslator.MetricTypeMonotonicCounter
		if in.histogram {
			typ = otlptranslator.MetricTypeHistogram
		}
		name, err := namer.Build(otlptranslator.Metric{Name: in.name, Unit: in.unit, Type: typ})
		if err != nil {
			continue // a name the exporter cannot serve either
		}
		scope := []*dto.LabelPair{{Name: proto.String("otel_scope_name"), Value: proto.String(in.scope)}}
		mf := &dto.MetricFamily{Name: proto.String(name), Help: proto.String(in.help)}
		if in.histogram {
			mf.Type = dto.MetricType_HISTOGRAM.Enum()
			mf.Metric = []*dto.Metric{{Label: scope, Histogram: &dto.Histogram{SampleCount: proto.Uint64(0), SampleSum: proto.Float64(0)}}}
		} else {
			mf.Type = dto.MetricType_COUNTER.Enum()
			mf.Metric = []*dto.Metric{{Label: scope, Counter: &dto.Counter{Value: proto.Float64(0)}}}
		}
		z.declared = append(z.declared, mf)
	}
}

// Gather returns what the registry gathers, plus the zero series of the
// declared instruments it lacks, sorted by name as a registry sorts them.
func (z *zeroFill) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := z.next.Gather()
	have := make(map[string]bool, len(mfs))
	for _, mf := range mfs {
		have[mf.GetName()] = true
	}
	z.mu.Lock()
	added := false
	for _, d := range z.declared {
		if !have[d.GetName()] {
			mfs = append(mfs, d)
			have[d.GetName()] = true
			added = true
		}
	}
	z.mu.Unlock()
	if added {
		slices.SortFunc(mfs, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	}
	return mfs, err
}
