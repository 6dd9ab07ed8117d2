package auth

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/mcpsag/router/internal/skill"
)

// fakeClock is a settable clock for the limiter.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func from(addr string) context.Context {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := net.LookupPort("tcp", port)
	return peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP(host), Port: p}})
}

func withToken(ctx context.Context, tok string) context.Context {
	return metadata.NewIncomingContext(ctx, metadata.Pairs("authorization", "Bearer "+tok))
}

// retryDelay returns the RetryInfo delay of a refusal, failing unless err is
// ResourceExhausted with one.
func retryDelay(t *testing.T, err error) time.Duration {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted {
		t.Fatalf("error %v: code %v, want ResourceExhausted", err, st.Code())
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	t.Fatalf("refusal %v carries no RetryInfo", err)
	return 0
}

func newTestLimiter(clock *fakeClock) *FailureLimiter {
	l := NewFailureLimiter()
	l.Now = clock.Now
	return l
}

// guesses numbers the tokens guess presents: each guess is a new one.
var guesses atomic.Int64

func newGuess() string { return fmt.Sprint("guess-", guesses.Add(1)) }

// guess is one failed attempt with a token not tried before: nil when it
// was checked (and counted), the refusal when it was not.
func guess(l *FailureLimiter, ctx context.Context) error {
	_, err := l.Attempt(ctx, "/m", nil, newGuess(), func() string { return ReasonBadToken })
	return err
}

// login is one successful attempt: nil, or the refusal.
func login(l *FailureLimiter, ctx context.Context) error {
	_, err := l.Attempt(ctx, "/m", nil, "the right token", func() string { return "" })
	return err
}

func TestFailureLimiterPerClient(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	l := newTestLimiter(clock)
	attacker, other := from("203.0.113.9:4000"), from("198.51.100.1:5000")
	for i := range DefaultClientFailureBurst {
		if err := guess(l, attacker); err != nil {
			t.Fatalf("attempt %d refused: %v", i+1, err)
		}
	}
	if d := retryDelay(t, guess(l, attacker)); d <= 0 || d > DefaultClientFailureEvery+time.Millisecond {
		t.Errorf("retry delay %v, want within (0, %v]", d, DefaultClientFailureEvery)
	}
	// Another port of the same host is the same client, right token or not.
	if err := login(l, from("203.0.113.9:4001")); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("same host, other port: %v, want refused", err)
	}
	if err := login(l, other); err != nil {
		t.Errorf("an innocent address was refused: %v", err)
	}
	// The budget refills one attempt per ClientEvery.
	clock.Add(DefaultClientFailureEvery)
	if err := guess(l, attacker); err != nil {
		t.Fatalf("after %v: %v, want one more attempt", DefaultClientFailureEvery, err)
	}
	if err := guess(l, attacker); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("after the refilled attempt failed: %v, want refused", err)
	}
}

// TestFailureLimiterConcurrentGuesses sends 200 guesses at once from one
// address: only the budget's 10 may be checked, however they interleave.
func TestFailureLimiterConcurrentGuesses(t *testing.T) {
	l := newTestLimiter(&fakeClock{t: time.Unix(1e9, 0)})
	ctx := from("203.0.113.5:1")
	var checked atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			_, _ = l.Attempt(ctx, "/m", nil, newGuess(), func() string {
				checked.Add(1)
				time.Sleep(time.Millisecond) // a slow check widens any race
				return ReasonBadToken
			})
		})
	}
	wg.Wait()
	if n := checked.Load(); n != DefaultClientFailureBurst {
		t.Errorf("%d of 200 concurrent guesses were checked, want %d", n, DefaultClientFailureBurst)
	}
}

func TestFailureLimiterIPv6Prefix(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	l := newTestLimiter(clock)
	for i := range DefaultClientFailureBurst {
		_ = guess(l, from(fmt.Sprintf("[2001:db8:1:2::%x]:443", i+1)))
	}
	if err := login(l, from("[2001:db8:1:2::ffff]:443")); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("another address of the same /64: %v, want refused", err)
	}
	if err := login(l, from("[2001:db8:1:3::1]:443")); err != nil {
		t.Errorf("another /64: %v, want admitted", err)
	}
}

func TestFailureLimiterGlobal(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	l := newTestLimiter(clock)
	known := from("192.0.2.50:1")
	if err := login(l, known); err != nil {
		t.Fatal(err)
	}
	// Guessing spread over many addresses, one attempt each.
	for i := range DefaultGlobalFailureBurst {
		if err := guess(l, from(fmt.Sprintf("10.0.%d.%d:1", i/250, i%250))); err != nil {
			t.Fatalf("attempt %d refused early: %v", i+1, err)
		}
	}
	err := login(l, from("10.9.9.9:1"))
	if d := retryDelay(t, err); d <= 0 || d > time.Second {
		t.Errorf("global retry delay %v, want within (0, 1s]", d)
	}
	if !strings.Contains(status.Convert(err).Message(), "on this router") {
		t.Errorf("global refusal message %q does not say it is router-wide", status.Convert(err).Message())
	}
	if err := login(l, known); err != nil {
		t.Errorf("a client that authenticated recently was refused during a global limit: %v", err)
	}
	clock.Add(DefaultGoodFor + time.Second)
	// By now the global budget has refilled.
	if err := login(l, from("10.9.9.9:1")); err != nil {
		t.Errorf("after the global budget refilled: %v", err)
	}
}

func TestFailureLimiterMemoryIsBounded(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	l := newTestLimiter(clock)
	l.MaxClients = 50
	l.GlobalBurst = 1 << 20
	for i := range 5000 {
		_ = guess(l, from(fmt.Sprintf("10.%d.%d.%d:1", i/65536, i/256%256, i%256)))
		clock.Add(time.Millisecond)
	}
	if n := l.Clients(); n > 50 {
		t.Errorf("tracking %d addresses, want at most 50", n)
	}
	// Idle, refilled entries are forgotten to make room.
	clock.Add(DefaultGoodFor + time.Duration(DefaultClientFailureBurst)*DefaultClientFailureEvery)
	for range DefaultClientFailureBurst + 1 {
		_ = guess(l, from("172.16.0.1:1"))
	}
	if err := guess(l, from("172.16.0.1:1")); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a new attacker after the sweep was not tracked: %v", err)
	}
}

// TestGuardRefusesWithoutCheckingTheToken drives the interceptor's check: a
// limited address is refused even with a valid token, and the refusals are
// audited once, with the count of the rest.
func TestGuardRefusesWithoutCheckingTheToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	content := "tokens:\n  - {id: agent, sha256: " + HashToken("right") + ", groups: ['*']}\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	toks, err := LoadTokens(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	audit := &auditLog{}
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	method := "/mcpsag.router.v1.SkillRouter/ListSkills"
	g := &Guard{Tokens: toks, Auditor: audit, Failures: newTestLimiter(clock), Methods: map[string]Operation{method: OpListSkills}}
	ctx := from("203.0.113.7:999")

	if _, _, _, err := g.check(withToken(ctx, "right"), method, nil); err != nil {
		t.Fatalf("valid token before any failure: %v", err)
	}
	for i := range DefaultClientFailureBurst {
		_, _, reason, err := g.check(withToken(ctx, fmt.Sprintf("guess-%d", i)), method, nil)
		if status.Code(err) != codes.Unauthenticated || reason != "bad_token" {
			t.Fatalf("guess %d: %v (%s), want Unauthenticated bad_token", i, err, reason)
		}
	}
	_, _, _, err = g.check(ctx, method, nil)
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("call without a token while limited: %v", err)
	}
	for range 30 {
		_, decision, _, err := g.check(withToken(ctx, "right"), method, nil)
		if status.Code(err) != codes.ResourceExhausted || decision != skill.DecisionRateLimited {
			t.Fatalf("valid token while limited: %v (%s), want ResourceExhausted without a check", err, decision)
		}
	}
	if _, _, _, err := g.check(withToken(from("198.51.100.2:1"), "right"), method, nil); err != nil {
		t.Errorf("another client with the valid token: %v", err)
	}
	// A minute later the budget has refilled; spending it again gets the
	// next refusal audited, with the count of the unaudited ones.
	clock.Add(auditEvery)
	for i := range DefaultClientFailureBurst {
		_, _, _, _ = g.check(withToken(ctx, fmt.Sprintf("guess-again-%d", i)), method, nil)
	}
	if _, _, _, err := g.check(withToken(ctx, "right"), method, nil); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("valid token after the second round: %v, want refused", err)
	}

	var failed, refusals, unaudited int
	for _, f := range audit.audited() {
		switch f.Reason {
		case ReasonBadToken:
			failed++
		case ReasonClientLimited:
			refusals++
			if f.Unaudited == 30 {
				unaudited++
			}
		}
	}
	if failed != 2*DefaultClientFailureBurst {
		t.Errorf("audited %d failed attempts, want %d", failed, 2*DefaultClientFailureBurst)
	}
	// 32 refusals: the first audited, 30 counted, the one a minute later
	// audited with that count.
	if refusals != 2 || unaudited != 1 {
		t.Errorf("refusal audit records = %d (%d with unaudited=30), want 2 (1): %+v", refusals, unaudited, audit.audited())
	}
}

// auditLog keeps the audit records a Guard hands its Auditor.
type auditLog struct {
	mu       sync.Mutex
	failures []AuthFailure
}

func (a *auditLog) AdminCalled(context.Context, AdminCall) {}

func (a *auditLog) AuthFailed(_ context.Context, f AuthFailure) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failures = append(a.failures, f)
}

// audited returns the failures recorded as audit records (the rest only
// count in the metric).
func (a *auditLog) audited() []AuthFailure {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []AuthFailure
	for _, f := range a.failures {
		if f.Audit {
			out = append(out, f)
		}
	}
	return out
}

// TestRepeatedWrongTokenSpendsOnce: a misconfigured client on a shared
// address (every local client is 127.0.0.1) polls with the same wrong
// token, or with none. Its repeats are answered as failures, never
// refused, spend nothing and are audited once a minute; a client with a
// valid token on the same address keeps working, and a guesser there is
// still limited after the budget.
func TestRepeatedWrongTokenSpendsOnce(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	l := newTestLimiter(clock)
	var audit auditLog
	local := from("127.0.0.1:5000")
	attempt := func(presented, reason string) (string, error) {
		return l.Attempt(local, "/m", &audit, presented, func() string { return reason })
	}
	for i := range 200 {
		for _, c := range []struct{ presented, reason string }{{"wrong", ReasonBadToken}, {"", ReasonNoToken}} {
			got, err := attempt(c.presented, c.reason)
			if err != nil || got != c.reason {
				t.Fatalf("repeat %d of %q: %q, %v; want %s and no refusal", i, c.presented, got, err, c.reason)
			}
		}
		clock.Add(time.Second)
		if err := login(l, local); err != nil {
			t.Fatalf("after %d repeats, a valid token on the same address was refused: %v", i+1, err)
		}
	}
	if n := len(audit.audited()); n < 2*3 || n > 2*5 {
		t.Errorf("%d audit records for 2 x 200 repeats over 200 s, want the first of each and about one a minute", n)
	}
	// The wrong token becomes valid (the tokens file was reloaded).
	if got, err := attempt("wrong", ""); err != nil || got != "" {
		t.Errorf("a repeated token accepted now: %q, %v", got, err)
	}
	// Guessing still spends (the two tokens above spent 2, refilled since).
	for i := range DefaultClientFailureBurst - 1 {
		if err := guess(l, local); err != nil {
			t.Fatalf("guess %d refused: %v", i+1, err)
		}
	}
	if _, err := attempt("last guess", ReasonBadToken); err != nil {
		t.Fatalf("the last guess of the budget refused: %v", err)
	}
	if err := guess(l, local); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a guess past the budget: %v, want refused", err)
	}
	// A client repeating a token that failed is still told it is wrong.
	if got, err := attempt("last guess", ReasonBadToken); err != nil || got != ReasonBadToken {
		t.Errorf("a repeat while the address is limited: %q, %v; want %s", got, err, ReasonBadToken)
	}
}
