package auth

import (
	"context"
	"net"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Reasons in AuthFailure records.
const (
	// ReasonNoToken and ReasonBadToken are checked failures: a call without
	// a bearer token, or with one that matches no configured token.
	ReasonNoToken  = "no_token"
	ReasonBadToken = "bad_token"
	// ReasonClientLimited and ReasonGlobalLimited are refusals without a
	// check: the client's address, or all clients together, failed too
	// often.
	ReasonClientLimited = "client_limited"
	ReasonGlobalLimited = "global_limited"
)

// AuthFailure describes failed authentication, for AuthFailed.
type AuthFailure struct {
	// Peer is the client address the limit applies to (an IP address, or
	// an IPv6 /64 prefix).
	Peer   string
	Method string
	// Reason is one of the Reason constants above.
	Reason string
	// Audit asks for an audit record. A client's first failure with what it
	// presented is always audited; its repeats and refusals are sampled
	// (the first, then about one a minute per client) so a flood cannot
	// flood the audit stream.
	Audit bool
	// Unaudited is how many earlier refusals of the same client this
	// record stands for.
	Unaudited int
	// RetryAfter is the delay a refused client was given.
	RetryAfter time.Duration
}

// Default failed-authentication limits: a client address may fail 10 times
// at once, then once every 6 seconds; all clients together 100 times, then
// 5 times a second.
const (
	DefaultClientFailureBurst = 10
	DefaultClientFailureEvery = 6 * time.Second
	DefaultGlobalFailureBurst = 100
	DefaultGlobalFailureRate  = 5
	// DefaultGoodFor is how long a successful authentication exempts an
	// address from the global limit.
	DefaultGoodFor = 10 * time.Minute
	// DefaultMaxClients bounds the addresses the limiter remembers.
	DefaultMaxClients = 10000
)

// auditEvery is how often refusals of one client (or of untracked clients)
// are audited; the metric counts every one.
const auditEvery = time.Minute

// FailureLimiter limits failed authentication, per client address and in
// total, against token guessing. Each missing or wrong token spends one unit
// of the client's budget and of the global one, the first time that client
// presents it: a client that repeats a token that failed (a misconfigured
// one, polling) guesses nothing, so its repeats are checked again and
// answered as failures without spending, and other clients on the same
// address (every local client shares 127.0.0.1) keep their budget. A client whose budget is spent
// is refused, without its token being checked, until the budget refills. When
// the global budget is spent (guessing from many addresses), clients that
// have not authenticated successfully within GoodFor are refused likewise,
// while known clients keep working. Refusals are ResourceExhausted errors with
// a RetryInfo delay.
//
// Addresses are IPs (the port is dropped; an IPv6 address counts as its /64
// prefix). Behind a proxy every client shares the proxy's address.
type FailureLimiter struct {
	ClientBurst int
	ClientEvery time.Duration
	GlobalBurst int
	GlobalRate  rate.Limit
	GoodFor     time.Duration
	MaxClients  int
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	once    sync.Once
	mu      sync.Mutex
	clients map[string]*failureClient
	global  *rate.Limiter
	// Sampling of refusals of clients the limiter does not track.
	untrackedAudited   time.Time
	untrackedUnaudited int
}

type failureClient struct {
	lim       *rate.Limiter
	good      time.Time // last successful authentication
	audited   time.Time // last audited refusal or repeat
	unaudited int       // refusals and repeats since then
	// failed are the last few things the client presented that failed
	// (Attempt's presented), and when.
	failed [rememberFailed]failedToken
	next   int
}

// rememberFailed is how many failed tokens a client's repeats are
// recognised for: a host may run a few misconfigured clients.
const rememberFailed = 4

type failedToken struct {
	presented string
	at        time.Time
}

// repeats reports whether presented failed for c within d before now.
func (c *failureClient) repeats(presented string, now time.Time, d time.Duration) bool {
	for _, f := range c.failed {
		if !f.at.IsZero() && f.presented == presented && now.Sub(f.at) <= d {
			return true
		}
	}
	return false
}

func (c *failureClient) remember(presented string, now time.Time) {
	c.failed[c.next] = failedToken{presented, now}
	c.next = (c.next + 1) % rememberFailed
}

// NewFailureLimiter returns a limiter with the default limits.
func NewFailureLimiter() *FailureLimiter {
	return &FailureLimiter{
		ClientBurst: DefaultClientFailureBurst, ClientEvery: DefaultClientFailureEvery,
		GlobalBurst: DefaultGlobalFailureBurst, GlobalRate: DefaultGlobalFailureRate,
		GoodFor: DefaultGoodFor, MaxClients: DefaultMaxClients,
	}
}

func (l *FailureLimiter) init() {
	l.once.Do(func() {
		if l.ClientBurst <= 0 {
			l.ClientBurst = DefaultClientFailureBurst
		}
		if l.ClientEvery <= 0 {
			l.ClientEvery = DefaultClientFailureEvery
		}
		if l.GlobalBurst <= 0 {
			l.GlobalBurst = DefaultGlobalFailureBurst
		}
		if l.GlobalRate <= 0 {
			l.GlobalRate = DefaultGlobalFailureRate
		}
		if l.GoodFor <= 0 {
			l.GoodFor = DefaultGoodFor
		}
		if l.MaxClients <= 0 {
			l.MaxClients = DefaultMaxClients
		}
		if l.Now == nil {
			l.Now = time.Now
		}
		l.clients = make(map[string]*failureClient)
		l.global = rate.NewLimiter(l.GlobalRate, l.GlobalBurst)
	})
}

// Attempt runs one authentication for the caller at ctx's peer, which
// presented presented: a digest of its token, "" for none. When the caller
// (or every client together) failed too often, it returns the refusal
// (ResourceExhausted with RetryInfo) without running check. Otherwise it runs
// check, which returns "" when the caller authenticated or the failure's
// reason (ReasonNoToken, ReasonBadToken), and returns that reason.
// A failure spends one unit of the caller's and of the global budget, unless
// the caller presented the same within GoodFor and it failed then: such a
// repeat is checked (a reloaded tokens file may accept it now) whatever the
// budgets, spends nothing, and is audited sampled. A success exempts the
// caller's address from the global limit for GoodFor (it refunds nothing). The limiter's lock is held across check, so
// concurrent attempts cannot all pass before the first failure counts; check
// must be quick (a token comparison is microseconds). Failures and refusals
// are recorded on rec (nil records nothing).
func (l *FailureLimiter) Attempt(ctx context.Context, method string, rec Auditor, presented string, check func() string) (string, error) {
	l.init()
	key := clientKey(ctx)
	l.mu.Lock()
	now := l.Now()
	if c := l.clients[key]; c != nil && c.repeats(presented, now, l.GoodFor) {
		return l.repeat(ctx, c, key, method, rec, now, check)
	}
	if f, limited := l.refusal(key, method, now); limited {
		l.mu.Unlock()
		if rec != nil {
			rec.AuthFailed(ctx, f)
		}
		msg := "too many failed authentication attempts from this address; retry after the delay in RetryInfo"
		if f.Reason == ReasonGlobalLimited {
			msg = "too many failed authentication attempts on this router; retry after the delay in RetryInfo"
		}
		st, _ := status.New(codes.ResourceExhausted, msg).
			WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(f.RetryAfter)})
		return "", st.Err()
	}
	reason := check()
	c := l.client(key, now)
	if reason == "" {
		if c != nil {
			c.good = now
		}
		l.mu.Unlock()
		return "", nil
	}
	if c != nil {
		c.lim.AllowN(now, 1)
		c.remember(presented, now)
	}
	l.global.AllowN(now, 1)
	l.mu.Unlock()
	if rec != nil {
		rec.AuthFailed(ctx, AuthFailure{Peer: key, Method: method, Reason: reason, Audit: true})
	}
	return reason, nil
}

// repeat checks again what client c presented before and failed with. It
// spends no budget. The caller holds l.mu; repeat releases it.
func (l *FailureLimiter) repeat(ctx context.Context, c *failureClient, key, method string, rec Auditor, now time.Time, check func() string) (string, error) {
	reason := check()
	if reason == "" {
		c.good = now
		l.mu.Unlock()
		return "", nil
	}
	f := AuthFailure{Peer: key, Method: method, Reason: reason}
	f.Audit, f.Unaudited = sample(&c.audited, &c.unaudited, now)
	l.mu.Unlock()
	if rec != nil {
		rec.AuthFailed(ctx, f)
	}
	return reason, nil
}

// sample says whether an event at now is audited, one a minute, and how
// many were not since the last that was. Callers hold l.mu.
func sample(audited *time.Time, unaudited *int, now time.Time) (bool, int) {
	if now.Sub(*audited) >= auditEvery {
		n := *unaudited
		*audited, *unaudited = now, 0
		return true, n
	}
	*unaudited++
	return false, 0
}

// refusal decides whether key is limited now and, if so, describes the
// refusal (audited when due). Callers hold l.mu.
func (l *FailureLimiter) refusal(key, method string, now time.Time) (AuthFailure, bool) {
	c := l.clients[key]
	f := AuthFailure{Peer: key, Method: method}
	switch {
	case c != nil && c.lim.TokensAt(now) < 1:
		f.Reason, f.RetryAfter = ReasonClientLimited, waitFor(c.lim, now)
	case l.global.TokensAt(now) < 1 && (c == nil || now.Sub(c.good) > l.GoodFor):
		f.Reason, f.RetryAfter = ReasonGlobalLimited, waitFor(l.global, now)
	default:
		return f, false
	}
	audited, unaudited := &l.untrackedAudited, &l.untrackedUnaudited
	if c != nil {
		audited, unaudited = &c.audited, &c.unaudited
	}
	f.Audit, f.Unaudited = sample(audited, unaudited, now)
	return f, true
}

// client returns the entry for key, creating it; nil when the table is full
// even after forgetting idle entries. Callers hold l.mu.
func (l *FailureLimiter) client(key string, now time.Time) *failureClient {
	if c := l.clients[key]; c != nil {
		return c
	}
	if len(l.clients) >= l.MaxClients {
		l.sweep(now)
		if len(l.clients) >= l.MaxClients {
			return nil
		}
	}
	c := &failureClient{lim: rate.NewLimiter(rate.Every(l.ClientEvery), l.ClientBurst)}
	l.clients[key] = c
	return c
}

// sweep forgets clients whose budget is full and whose last success is older
// than GoodFor: they are indistinguishable from new ones.
func (l *FailureLimiter) sweep(now time.Time) {
	for k, c := range l.clients {
		if c.lim.TokensAt(now) >= float64(l.ClientBurst) && now.Sub(c.good) > l.GoodFor {
			delete(l.clients, k)
		}
	}
}

// Clients returns how many addresses the limiter tracks.
func (l *FailureLimiter) Clients() int {
	l.init()
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}

// waitFor is the time until lim has one token, rounded up to a millisecond.
func waitFor(lim *rate.Limiter, now time.Time) time.Duration {
	missing := 1 - lim.TokensAt(now)
	if missing <= 0 {
		return 0
	}
	d := time.Duration(missing / float64(lim.Limit()) * float64(time.Second))
	return d.Truncate(time.Millisecond) + time.Millisecond
}

// clientKey is the address failures are counted against: the peer's IP
// without the port; an IPv6 address counts as its /64 prefix, since one host
// commonly holds a whole /64.
func clientKey(ctx context.Context) string {
	addr := PeerAddr(ctx)
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return host
	case ip.To4() != nil:
		return ip.To4().String()
	default:
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
}
