package mcp

import (
	"context"
	"fmt"

	"github.com/mcpsag/router/internal/skill"
)

// ProbeFeatures finds the features a router reached over the network lets
// its caller use for agent, so that a session over it offers only those:
// one malformed request per token group (match, read, load, exec), each of
// which the router refuses as malformed when the caller holds the group and
// as permission denied when it does not. Each probe spends one unit of the
// token's rate limit. A router that cannot be reached is assumed to allow
// everything (its errors then reach the client). It fails when every group
// is refused: the token has none of them, or may not act for agent.
func ProbeFeatures(ctx context.Context, r skill.Router, agent string) (Features, error) {
	probes := []struct {
		grants Features
		call   func() error
	}{
		{FeatureFind | FeatureList, func() error {
			_, err := r.Match(ctx, skill.MatchRequest{Agent: agent})
			return err
		}},
		{FeatureList, func() error {
			_, err := r.List(ctx, skill.ListRequest{Agent: agent, PageSize: -1})
			return err
		}},
		{FeatureLoad, func() error {
			_, err := r.Load(ctx, skill.LoadRequest{Agent: agent})
			return err
		}},
		{FeatureExec | FeatureCall, func() error {
			_, err := r.AuthorizeExec(ctx, skill.ExecRequest{Agent: agent})
			return err
		}},
	}
	var f Features
	var denied error
	for _, p := range probes {
		err := p.call()
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if skill.ErrorCode(err) == skill.CodePermissionDenied {
			denied = err
			continue
		}
		f |= p.grants
	}
	if f == 0 {
		return 0, fmt.Errorf("the router refuses every MCP feature to this caller (for agent %q): %w", agent, denied)
	}
	return f, nil
}
