package daemon

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/skill"
)

// lostRouter answers every call with err, counting them.
type lostRouter struct {
	skill.Router
	err   error
	calls atomic.Int32
}

func (r *lostRouter) CallTool(context.Context, skill.ToolCall) (*skill.ToolResult, error) {
	r.calls.Add(1)
	return nil, r.err
}

func (r *lostRouter) Match(context.Context, skill.MatchRequest) (*skill.MatchResult, error) {
	r.calls.Add(1)
	return nil, r.err
}

// okRouter answers every call.
type okRouter struct{ skill.Router }

func (okRouter) CallTool(context.Context, skill.ToolCall) (*skill.ToolResult, error) {
	return &skill.ToolResult{}, nil
}

func (okRouter) Match(context.Context, skill.MatchRequest) (*skill.MatchResult, error) {
	return &skill.MatchResult{}, nil
}

// TestSharedRouterWaitsForTheTakeover: a call that finds the holder out of
// reach waits for the swap and runs on the new router; one that acts waits
// only when it was never sent, and a call cut off mid-way that may have
// run is answered as it failed. Waiting tells the takeover.
func TestSharedRouterWaitsForTheTakeover(t *testing.T) {
	unreachable := skill.Errorf(skill.CodeUnavailable, "cannot reach the router").WithReason(skill.ReasonRouterUnreachable)
	lost := skill.Errorf(skill.CodeUnavailable, "cannot reach the router").WithReason(skill.ReasonRouterLost)
	for _, tc := range []struct {
		name  string
		err   error
		acts  bool
		waits bool // else it fails at once, as the holder answered
	}{
		{"a read, never sent", unreachable, false, true},
		{"a read, cut off", lost, false, true},
		{"a tool call, never sent", unreachable, true, true},
		{"a tool call, cut off", lost, true, false},
		{"a read, refused by the holder", skill.Errorf(skill.CodeInvalidArgument, "bad"), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			holder := &lostRouter{err: tc.err}
			s := newSharedRouter(holder)
			go func() {
				<-s.lost // the takeover is told, then swaps
				time.Sleep(50 * time.Millisecond)
				s.swap(okRouter{})
			}()
			var err error
			if tc.acts {
				_, err = s.CallTool(context.Background(), skill.ToolCall{Name: "t"})
			} else {
				_, err = s.Match(context.Background(), skill.MatchRequest{Task: "x"})
			}
			if tc.waits && err != nil || !tc.waits && (!errors.Is(err, tc.err) || holder.calls.Load() != 1) {
				t.Errorf("err %v after %d calls to the holder; want it to wait for the takeover: %v", err, holder.calls.Load(), tc.waits)
			}
		})
	}
	// Without a takeover, a call waits takeoverWait at most: here its
	// context ends first.
	s := newSharedRouter(&lostRouter{err: unreachable})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := s.Match(ctx, skill.MatchRequest{Task: "x"}); !errors.Is(err, unreachable) {
		t.Errorf("no takeover: %v", err)
	}
}
