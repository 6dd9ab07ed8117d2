package auth

import (
	"context"
	"crypto/sha256"
	"strings"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/mcpsag/router/internal/skill"
)

func open(method string) bool { return strings.HasPrefix(method, "/grpc.health.v1.Health/") }

type principalKey struct{}

// PrincipalFrom returns the caller the interceptor authenticated.
func PrincipalFrom(ctx context.Context) *Principal {
	if p, ok := ctx.Value(principalKey{}).(*Principal); ok {
		return p
	}
	return Anonymous
}

// PeerAddr returns the client's address, for audit records.
func PeerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

// Guard authenticates and authorises calls. With Tokens nil, every call is
// allowed as Anonymous (or as the client certificate's subject under mTLS);
// admin calls are audited either way.
type Guard struct {
	Tokens *Tokens
	// Methods names the operation each full gRPC method asks for (the
	// gRPC front's table). With tokens on, a method it does not name is
	// let through for an authenticated caller, who learns that it does
	// not exist (Unimplemented); health is always open.
	Methods map[string]Operation
	// Auditor records the access decisions on admin calls, rate-limited
	// calls and failed authentication; nil records nothing.
	Auditor Auditor
	// Failures limits failed authentication per client address and in
	// total; nil means NewFailureLimiter's defaults.
	Failures *FailureLimiter
	failOnce sync.Once
}

// failures returns the failed-authentication limiter.
func (g *Guard) failures() *FailureLimiter {
	g.failOnce.Do(func() {
		if g.Failures == nil {
			g.Failures = NewFailureLimiter()
		}
	})
	return g.Failures
}

// AdminCall describes one call to an admin method (Reindex, ...) or one
// rate-limited call, and the access decision on it.
type AdminCall struct {
	// Method is the full gRPC method, /mcpsag.router.v1.SkillRouter/Reindex.
	Method string
	// Principal is a token id or certificate identity, never the token.
	Principal string
	Decision  skill.Decision
	Reason    string // why it was denied or limited; empty when allowed
	Peer      string // client address
	// Code is the call's result (a gRPC code name), empty when the call
	// was not run.
	Code string
}

// Auditor records audited access decisions; telemetry.Recorder is one.
type Auditor interface {
	AdminCalled(ctx context.Context, a AdminCall)
	AuthFailed(ctx context.Context, f AuthFailure)
}

// agentRequest is implemented by requests that name an agent.
type agentRequest interface{ GetAgent() string }

// authenticate checks the call's bearer token, within the failed-
// authentication limits. It returns the principal, or a status error with
// the decision for the audit.
func (g *Guard) authenticate(ctx context.Context, method string) (*Principal, skill.Decision, string, error) {
	if g.Tokens == nil {
		return certPrincipal(ctx), skill.DecisionAllow, "", nil
	}
	var p *Principal
	tok, ok := bearer(ctx)
	presented := ""
	if ok {
		sum := sha256.Sum256([]byte(tok))
		presented = string(sum[:])
	}
	failure, err := g.failures().Attempt(ctx, method, g.Auditor, presented, func() string {
		if !ok {
			return ReasonNoToken
		}
		if p, ok = g.Tokens.Authenticate(tok); !ok {
			return ReasonBadToken
		}
		return ""
	})
	switch {
	case err != nil:
		return nil, skill.DecisionRateLimited, "auth_failures", err
	case failure == ReasonNoToken:
		return nil, skill.DecisionDeny, "no_token", status.Error(codes.Unauthenticated,
			"missing bearer token: send the header 'authorization: Bearer <token>' (routerctl --token or MCPSAG_TOKEN)")
	case failure != "":
		return nil, skill.DecisionDeny, "bad_token", status.Error(codes.Unauthenticated, "invalid bearer token")
	}
	return p, skill.DecisionAllow, "", nil
}

// check authenticates the call, unless Authenticate did before the request
// was decoded, and checks its group, agent and rate. It returns the
// principal, or a status error with the decision for the audit.
func (g *Guard) check(ctx context.Context, method string, req any) (*Principal, skill.Decision, string, error) {
	p, ok := ctx.Value(authenticatedKey{}).(*Principal)
	if !ok {
		var (
			decision skill.Decision
			reason   string
			err      error
		)
		if p, decision, reason, err = g.authenticate(ctx, method); err != nil {
			return nil, decision, reason, err
		}
	}
	if g.Tokens == nil {
		return p, skill.DecisionAllow, "", nil
	}
	op, known := g.Methods[method]
	grp, _ := GroupOf(op)
	if !known {
		// An authenticated caller may learn that a method does not exist:
		// the unknown-service handler answers Unimplemented.
		return p, skill.DecisionAllow, "", nil
	}
	if !p.May(op) {
		return p, skill.DecisionDeny, "scope", status.Errorf(codes.PermissionDenied,
			"token %s may not call %s (needs group %s; it has %s)", p.ID, method, grp, strings.Join(p.Groups(), ", "))
	}
	if ar, ok := req.(agentRequest); ok && !p.ActsFor(ar.GetAgent()) {
		agent := ar.GetAgent()
		if agent == "" {
			agent = "(none)"
		}
		return p, skill.DecisionDeny, "agent", status.Errorf(codes.PermissionDenied,
			"token %s may not act for agent %s; set agent to one the token is bound to", p.ID, agent)
	}
	if op == OpDescribeAPI {
		// Discovering the API (grpcurl) does not spend the token's budget.
		return p, skill.DecisionAllow, "", nil
	}
	if d := p.Admit(); d > 0 {
		st, _ := status.New(codes.ResourceExhausted, "rate limit of token "+p.ID+" exceeded; retry after the delay in RetryInfo").
			WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(d.Round(time.Millisecond) + time.Millisecond)})
		return p, skill.DecisionRateLimited, "rate_limit", st.Err()
	}
	return p, skill.DecisionAllow, "", nil
}

// authenticatedKey marks a context whose call Authenticate passed; its
// value is the principal.
type authenticatedKey struct{}

// Authenticate checks the call's token before its request is decoded: a
// caller without a valid token learns nothing of how the server reads
// requests, and its failure is limited and audited like any other. It
// returns ctx marked for Unary, which then checks only the principal's
// group, agent and rate. Health is open.
func (g *Guard) Authenticate(ctx context.Context, method string) (context.Context, error) {
	if open(method) {
		return ctx, nil
	}
	p, decision, reason, err := g.authenticate(ctx, method)
	if err != nil {
		if g.admin(method) {
			g.audit(ctx, method, nil, decision, reason, status.Code(err))
		}
		return ctx, err
	}
	return context.WithValue(ctx, authenticatedKey{}, p), nil
}

// Unary returns the unary interceptor.
func (g *Guard) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if open(info.FullMethod) {
			return h(ctx, req)
		}
		p, decision, reason, err := g.check(ctx, info.FullMethod, req)
		admin := g.admin(info.FullMethod)
		if err != nil {
			// Refusals after failed authentication (p nil) are audited,
			// sampled, by the failure limiter.
			if admin || (decision == skill.DecisionRateLimited && p != nil) {
				g.audit(ctx, info.FullMethod, p, decision, reason, status.Code(err))
			}
			return nil, err
		}
		resp, err := h(context.WithValue(ctx, principalKey{}, p), req)
		if admin {
			g.audit(ctx, info.FullMethod, p, skill.DecisionAllow, "", status.Code(err))
		}
		return resp, err
	}
}

// Stream returns the stream interceptor (server reflection).
func (g *Guard) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if open(info.FullMethod) {
			return h(srv, ss)
		}
		if _, _, _, err := g.check(ss.Context(), info.FullMethod, nil); err != nil {
			return err
		}
		return h(srv, ss)
	}
}

// admin reports whether method asks for an operation of group admin,
// whose calls are audited.
func (g *Guard) admin(method string) bool {
	grp, _ := GroupOf(g.Methods[method])
	return grp == GroupAdmin
}

func (g *Guard) audit(ctx context.Context, method string, p *Principal, d skill.Decision, reason string, code codes.Code) {
	id := "unauthenticated"
	if p != nil {
		id = p.ID
	}
	if g.Auditor == nil {
		return
	}
	g.Auditor.AdminCalled(ctx, AdminCall{
		Method: method, Principal: id, Decision: d, Reason: reason, Peer: PeerAddr(ctx), Code: code.String(),
	})
}

// bearer extracts the token from the authorization header.
func bearer(ctx context.Context) (string, bool) {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		scheme, tok, ok := strings.Cut(v, " ")
		if ok && strings.EqualFold(scheme, "bearer") && strings.TrimSpace(tok) != "" {
			return strings.TrimSpace(tok), true
		}
	}
	return "", false
}

// certPrincipal names an mTLS client by its certificate's common name.
func certPrincipal(ctx context.Context) *Principal {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return Anonymous
	}
	if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 && len(ti.State.VerifiedChains[0]) > 0 {
		if cn := ti.State.VerifiedChains[0][0].Subject.CommonName; cn != "" {
			return &Principal{ID: "cert:" + cn, groups: anonymousGroups}
		}
	}
	return Anonymous
}

var anonymousGroups = map[Group]bool{GroupRead: true, GroupMatch: true, GroupLoad: true, GroupExec: true, GroupAdmin: true}
