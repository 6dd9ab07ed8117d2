package skill

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// statusRouter answers Status and nothing else.
type statusRouter struct{ Router }

func (statusRouter) Status(context.Context) (*Status, error) { return &Status{Generation: 7}, nil }

func TestRelay(t *testing.T) {
	ctx, refused := context.Background(), errors.New("refused")
	var repeatable []bool
	r := Relay{Via: func(_ context.Context, rep bool, _ func(Router) error) error {
		repeatable = append(repeatable, rep)
		return refused
	}}
	errs := []error{
		second(r.Match(ctx, MatchRequest{})), second(r.List(ctx, ListRequest{})), second(r.Get(ctx, GetRequest{})),
		second(r.Load(ctx, LoadRequest{})), second(r.Reindex(ctx, ReindexRequest{})), second(r.Status(ctx)),
		second(r.AuthorizeExec(ctx, ExecRequest{})), second(r.ReportExecResult(ctx, ExecReport{})),
		second(r.CallTool(ctx, ToolCall{})),
	}
	for i, err := range errs {
		if err != refused {
			t.Errorf("call %d: err %v, want Via's", i, err)
		}
	}
	if want := []bool{true, true, true, true, true, true, false, false, false}; !slices.Equal(repeatable, want) {
		t.Errorf("repeatable = %v, want %v", repeatable, want)
	}

	through := Relay{Via: func(_ context.Context, _ bool, call func(Router) error) error { return call(statusRouter{}) }}
	if st, err := through.Status(ctx); err != nil || st.Generation != 7 {
		t.Errorf("Status through = %+v, %v; want the callee's answer", st, err)
	}
}

func second[T any](_ T, err error) error { return err }
