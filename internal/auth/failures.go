package auth

import (
	"cmp"
	"context"
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
	// Peer is the caller the limit applies to (Caller.Key): an IP address
	// or an IPv6 /64 prefix, a loopback connection (address and port), or
	// a process on the Unix socket (unix:pid=PID,uid=UID).
	Peer   string
	Method string
	// Reason is one of the Reason constants above.
	Reason string
	// Audit asks for an audit record. A remote caller's first failure with
	// what it presented is always audited; a local caller's too, up to the
	// global limit's rate for all local callers together (a process may
	// open connections without end); repeats and refusals are sampled (the
	// first, then about one a minute per caller), so a flood cannot flood
	// the audit stream.
	Audit bool
	// Unaudited is how many earlier refusals of the same client this
	// record stands for.
	Unaudited int
	// RetryAfter is the delay a refused client was given.
	RetryAfter time.Duration
}

// Default failed-authentication limits: a caller may fail 10 times at once,
// then once every 6 seconds; all remote callers together 100 times, then 5
// times a second.
const (
	DefaultClientFailureBurst = 10
	DefaultClientFailureEvery = 6 * time.Second
	DefaultGlobalFailureBurst = 100
	DefaultGlobalFailureRate  = 5
	// DefaultGoodFor is how long a successful authentication exempts an
	// address from the global limit.
	DefaultGoodFor = 10 * time.Minute
	// DefaultMaxClients bounds the callers the limiter remembers, remote
	// and local each.
	DefaultMaxClients = 10000
)

// auditEvery is how often refusals of one client (or of untracked clients)
// are audited; the metric counts every one.
const auditEvery = time.Minute

// FailureLimiter limits failed authentication, per caller and in total,
// against token guessing. Callers are what Callers says (CallerOf: a remote
// IP address or IPv6 /64, a loopback connection, a process on the Unix
// socket). Each missing or wrong token spends one unit of the caller's
// budget, and a remote caller's also one of the global budget, the first
// time that caller presents it: a caller that repeats a token that failed
// (a misconfigured client, polling) guesses nothing, so its repeats are
// checked again and answered as failures without spending. A caller whose
// budget is spent is refused, without its token being checked, until the
// budget refills. When the global budget is spent (guessing from many
// addresses), remote callers that have not authenticated successfully
// within GoodFor are refused likewise, while known ones keep working.
// Refusals are ResourceExhausted errors with a RetryInfo delay.
//
// Local callers have budgets of their own (a connection, a process), so a
// local client with wrong tokens never spends another's; they do not count
// towards the global budget (a local process cannot make the router refuse
// remote clients), and it does not refuse them. A valid token presented on
// a new local connection is always checked, and served.
type FailureLimiter struct {
	ClientBurst int
	ClientEvery time.Duration
	GlobalBurst int
	GlobalRate  rate.Limit
	GoodFor     time.Duration
	MaxClients  int
	// Callers says whom the failures of a call are counted against; nil
	// means CallerOf.
	Callers func(context.Context) Caller
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	once sync.Once
	mu   sync.Mutex
	// clients are the remote callers, locals the local ones: local
	// connections, however many, cannot push remote callers out.
	clients, locals map[string]*failureClient
	global          *rate.Limiter
	// localAudits bounds the audit records of local callers' first
	// failures; localUnaudited counts those left out since the last.
	localAudits    *rate.Limiter
	localUnaudited int
	// localFailed are what local callers presented that failed lately,
	// whichever connection or process: a local client that presents one
	// again (started again with the same wrong token) repeats it, and
	// guesses nothing. Their repeats are sampled together.
	localFailed        failedRing
	localRepeatAudited time.Time
	localRepeatUnseen  int
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
	failed failedRing
}

// rememberFailed is how many failed tokens a client's repeats are
// recognised for: a host may run a few misconfigured clients.
const rememberFailed = 4

// rememberLocalFailed is how many failed tokens local callers' repeats
// are recognised for, all local callers together.
const rememberLocalFailed = 64

type failedToken struct {
	presented string
	at        time.Time
}

// failedRing holds the last tokens that failed, the oldest replaced first:
// rememberFailed of them, or as many as its slice holds.
type failedRing struct {
	tokens []failedToken
	next   int
}

// repeats reports whether presented failed within d before now.
func (r *failedRing) repeats(presented string, now time.Time, d time.Duration) bool {
	for _, f := range r.tokens {
		if f.presented == presented && now.Sub(f.at) <= d {
			return true
		}
	}
	return false
}

// remember records that presented failed at now, keeping at most size.
func (r *failedRing) remember(presented string, now time.Time, size int) {
	if len(r.tokens) < size {
		r.tokens = append(r.tokens, failedToken{presented, now})
		return
	}
	r.tokens[r.next] = failedToken{presented, now}
	r.next = (r.next + 1) % size
}

// NewFailureLimiter returns a limiter with the default limits.
func NewFailureLimiter() *FailureLimiter {
	return &FailureLimiter{
		ClientBurst: DefaultClientFailureBurst, ClientEvery: DefaultClientFailureEvery,
		GlobalBurst: DefaultGlobalFailureBurst, GlobalRate: DefaultGlobalFailureRate,
		GoodFor: DefaultGoodFor, MaxClients: DefaultMaxClients,
	}
}

// positiveOr returns v when it is above zero, else def.
func positiveOr[T cmp.Ordered](v, def T) T {
	var zero T
	if v <= zero {
		return def
	}
	return v
}

func (l *FailureLimiter) init() {
	l.once.Do(func() {
		l.ClientBurst = positiveOr(l.ClientBurst, DefaultClientFailureBurst)
		l.ClientEvery = positiveOr(l.ClientEvery, DefaultClientFailureEvery)
		l.GlobalBurst = positiveOr(l.GlobalBurst, DefaultGlobalFailureBurst)
		l.GlobalRate = positiveOr(l.GlobalRate, DefaultGlobalFailureRate)
		l.GoodFor = positiveOr(l.GoodFor, DefaultGoodFor)
		l.MaxClients = positiveOr(l.MaxClients, DefaultMaxClients)
		if l.Now == nil {
			l.Now = time.Now
		}
		if l.Callers == nil {
			l.Callers = CallerOf
		}
		l.clients, l.locals = make(map[string]*failureClient), make(map[string]*failureClient)
		l.global = rate.NewLimiter(l.GlobalRate, l.GlobalBurst)
		l.localAudits = rate.NewLimiter(l.GlobalRate, l.GlobalBurst)
	})
}

// Attempt runs one authentication for the caller of the call in ctx
// (Callers), which presented presented: a digest of its token, "" for none.
// When the caller (or every remote caller together) failed too often, it
// returns the refusal (ResourceExhausted with RetryInfo) without running
// check. Otherwise it runs check, which returns "" when the caller
// authenticated or the failure's reason (ReasonNoToken, ReasonBadToken),
// and returns that reason. A failure spends one unit of the caller's budget
// and, for a remote caller, of the global one, unless the caller presented
// the same within GoodFor and it failed then: such a repeat is checked (a
// reloaded tokens file may accept it now) whatever the budgets, spends
// nothing, and is audited sampled. A success exempts the caller from the
// global limit for GoodFor (it refunds nothing). The limiter's lock is held
// across check, so concurrent attempts cannot all pass before the first
// failure counts; check must be quick (a token comparison is microseconds).
// Failures and refusals are recorded on rec (nil records nothing).
func (l *FailureLimiter) Attempt(ctx context.Context, method string, rec Auditor, presented string, check func() string) (string, error) {
	l.init()
	caller := l.Callers(ctx)
	key := caller.Key
	l.mu.Lock()
	now := l.Now()
	table := l.table(caller)
	c := table[key]
	if c != nil && c.failed.repeats(presented, now, l.GoodFor) || caller.Local && l.localFailed.repeats(presented, now, l.GoodFor) {
		return l.repeat(ctx, l.client(table, key, now), caller.Local, key, method, rec, now, check)
	}
	if f, limited := l.refusal(caller, method, now); limited {
		l.mu.Unlock()
		if rec != nil {
			rec.AuthFailed(ctx, f)
		}
		msg := "too many failed authentication attempts from this address; retry after the delay in RetryInfo"
		if caller.Local {
			msg = "too many failed authentication attempts from this local client (a connection, or a process on the socket); retry after the delay in RetryInfo"
		}
		if f.Reason == ReasonGlobalLimited {
			msg = "too many failed authentication attempts on this router; retry after the delay in RetryInfo"
		}
		st, _ := status.New(codes.ResourceExhausted, msg).
			WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(f.RetryAfter)})
		return "", st.Err()
	}
	reason := check()
	c = l.client(table, key, now)
	if reason == "" {
		if c != nil {
			c.good = now
		}
		l.mu.Unlock()
		return "", nil
	}
	if c != nil {
		c.lim.AllowN(now, 1)
		c.failed.remember(presented, now, rememberFailed)
	}
	if caller.Local {
		l.localFailed.remember(presented, now, rememberLocalFailed)
	}
	f := AuthFailure{Peer: key, Method: method, Reason: reason, Audit: true}
	if !caller.Local {
		l.global.AllowN(now, 1)
	} else if f.Audit = l.localAudits.AllowN(now, 1); f.Audit {
		f.Unaudited, l.localUnaudited = l.localUnaudited, 0
	} else {
		l.localUnaudited++
	}
	l.mu.Unlock()
	if rec != nil {
		rec.AuthFailed(ctx, f)
	}
	return reason, nil
}

// repeat checks again what caller c (nil when the table is full)
// presented, which failed before: for c itself or, for a local caller, for
// any local caller. It spends no budget. A remote caller's repeats are
// audited sampled per caller, local callers' together. The caller holds
// l.mu; repeat releases it.
func (l *FailureLimiter) repeat(ctx context.Context, c *failureClient, local bool, key, method string, rec Auditor, now time.Time, check func() string) (string, error) {
	reason := check()
	if reason == "" {
		if c != nil {
			c.good = now
		}
		l.mu.Unlock()
		return "", nil
	}
	f := AuthFailure{Peer: key, Method: method, Reason: reason}
	if local {
		f.Audit, f.Unaudited = sample(&l.localRepeatAudited, &l.localRepeatUnseen, now)
	} else {
		f.Audit, f.Unaudited = sample(&c.audited, &c.unaudited, now)
	}
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

// table is the table of caller's kind. Callers hold l.mu.
func (l *FailureLimiter) table(caller Caller) map[string]*failureClient {
	if caller.Local {
		return l.locals
	}
	return l.clients
}

// refusal decides whether caller is limited now and, if so, describes the
// refusal (audited when due). Callers hold l.mu.
func (l *FailureLimiter) refusal(caller Caller, method string, now time.Time) (AuthFailure, bool) {
	c := l.table(caller)[caller.Key]
	f := AuthFailure{Peer: caller.Key, Method: method}
	switch {
	case c != nil && c.lim.TokensAt(now) < 1:
		f.Reason, f.RetryAfter = ReasonClientLimited, waitFor(c.lim, now)
	case !caller.Local && l.global.TokensAt(now) < 1 && (c == nil || now.Sub(c.good) > l.GoodFor):
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

// client returns the entry for key in table, creating it; nil when the
// table is full even after forgetting idle entries. Callers hold l.mu.
func (l *FailureLimiter) client(table map[string]*failureClient, key string, now time.Time) *failureClient {
	if c := table[key]; c != nil {
		return c
	}
	if len(table) >= l.MaxClients {
		l.sweep(table, now)
		if len(table) >= l.MaxClients {
			return nil
		}
	}
	c := &failureClient{lim: rate.NewLimiter(rate.Every(l.ClientEvery), l.ClientBurst)}
	table[key] = c
	return c
}

// sweep forgets the callers of table whose budget is full and whose last
// success is older than GoodFor: they are indistinguishable from new ones.
func (l *FailureLimiter) sweep(table map[string]*failureClient, now time.Time) {
	for k, c := range table {
		if c.lim.TokensAt(now) >= float64(l.ClientBurst) && now.Sub(c.good) > l.GoodFor {
			delete(table, k)
		}
	}
}

// Clients returns how many callers the limiter tracks, remote and local.
func (l *FailureLimiter) Clients() int {
	l.init()
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients) + len(l.locals)
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
