package match

import (
	"bufio"
	"bytes"
	"reflect"
	"strconv"
	"testing"
)

// A stub with every field set comes back whole from the snapshot's
// encoding: a field added to skill.SearchSource (or to stub) that the
// encoding misses fails here, and must come with a new
// statedir.IndexVersion.
func TestStubCarriesEveryField(t *testing.T) {
	var st stub
	n := 0
	v := reflect.ValueOf(&st).Elem()
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		n++
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				fill(v.Field(i))
			}
		case reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 2, 2))
			for i := range 2 {
				fill(v.Index(i))
			}
		case reflect.String:
			v.SetString("s" + strconv.Itoa(n))
		case reflect.Bool:
			v.SetBool(true)
		default:
			t.Fatalf("a stub field of kind %s: teach this test and the encoding about it", v.Kind())
		}
	}
	fill(v)
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	e := &enc{w: bw}
	e.stub(st)
	if e.err != nil || bw.Flush() != nil {
		t.Fatal(e.err)
	}
	d := &dec{b: buf.Bytes()}
	got := d.stub()
	if d.err != nil || d.off != len(d.b) {
		t.Fatalf("decode: %v, %d of %d bytes read", d.err, d.off, len(d.b))
	}
	if !reflect.DeepEqual(got, st) {
		t.Errorf("decoded %+v\nwant %+v", got, st)
	}
	if s := st.skill(); !reflect.DeepEqual(stubOf(s), st) {
		t.Errorf("stubOf(stand-in) = %+v\nwant %+v", stubOf(s), st)
	}
}
