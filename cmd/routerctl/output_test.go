package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
)

func TestPrintJSONKeepsZeroValues(t *testing.T) {
	type inner struct {
		Tags []string `json:"tags"`
	}
	type doc struct {
		Name   string           `json:"name"`
		Count  int              `json:"count"`
		List   []inner          `json:"list"`
		Nested inner            `json:"nested"`
		Ptr    *inner           `json:"ptr"`
		Map    map[string]int   `json:"map"`
		Skip   []string         `json:"-"`
		Items  []*inner         `json:"items"`
		ByKey  map[string]inner `json:"by_key"`
	}
	var out bytes.Buffer
	e := &env{stdout: &out}
	if err := e.printJSON(doc{Items: []*inner{{}}}); err != nil {
		t.Fatal(err)
	}
	want := `{
  "name": "",
  "count": 0,
  "list": [],
  "nested": {
    "tags": []
  },
  "ptr": null,
  "map": {},
  "items": [
    {
      "tags": []
    }
  ],
  "by_key": {}
}
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	if err := e.printJSON(map[string]string{"html": "<skill_content>&"}); err != nil || !strings.Contains(out.String(), `"<skill_content>&"`) {
		t.Errorf("HTML escaped or error %v: %s", err, out.String())
	}
}

func TestProtoRawOfAnUnsetMessageIsNull(t *testing.T) {
	var unset *routerv1.ModelStatus
	if got := string(protoRaw(unset)); got != "null" {
		t.Errorf("unset message: %s", got)
	}
	got := protoRaw(&routerv1.ModelStatus{Name: "m"})
	var v map[string]any
	if err := json.Unmarshal(got, &v); err != nil || v["name"] != "m" || v["dimension"] != 0.0 {
		t.Errorf("set message: %s (%v)", got, err)
	}
}

func TestProgressDrawsOnlyOnATerminal(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b)
	p.Show("step %d", 1)
	p.Clear()
	if p.On() || b.Len() != 0 {
		t.Errorf("progress drawn into a buffer: %q", b.String())
	}

	p = &progress{w: &b, on: true, width: func() int { return 12 }}
	p.Show("phase %d/%d", 1, 10)
	p.Show("phase %d/%d", 2, 10) // dropped: too soon
	p.last = time.Now().Add(-time.Second)
	p.Show("a long line that does not fit")
	p.Clear()
	p.Clear()
	if got, want := b.String(), "\r\x1b[Kphase 1/10\r\x1b[Ka long lin…\r\x1b[K"; got != want {
		t.Errorf("drew %q, want %q", got, want)
	}
}

func TestCalibratedPath(t *testing.T) {
	for in, want := range map[string]string{
		"examples/.mcp/.mcp-config.yaml": "examples/.mcp/.mcp-config.calibrated.yaml",
		"router.yml":                     "router.calibrated.yaml",
		"conf":                           "conf.calibrated.yaml",
	} {
		if got := calibratedPath(in); got != want {
			t.Errorf("calibratedPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestModelInfoSaysTheFastModelIsUnloaded(t *testing.T) {
	st := &skill.Status{
		Model:     &skill.ModelStatus{Name: "encoder", Serving: true},
		FastModel: &skill.ModelStatus{Name: "static"},
	}
	var loaded, released bytes.Buffer
	writeModelInfo(&loaded, st)
	st.FastModel.Released = true
	writeModelInfo(&released, st)
	if strings.Contains(loaded.String(), "unloaded") {
		t.Errorf("a loaded fast model is called unloaded:\n%s", loaded.String())
	}
	if !strings.Contains(released.String(), "fast model:     static (dim 0, query latency 0s; unloaded until a reindex needs it)") {
		t.Errorf("a released fast model is not called unloaded:\n%s", released.String())
	}
	if !strings.Contains(released.String(), "serving:        encoder") {
		t.Errorf("serving line:\n%s", released.String())
	}
}
