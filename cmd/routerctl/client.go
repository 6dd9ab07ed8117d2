package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/remote"
)

// Backoff between attempts of a call the router answered Unavailable, and
// of the connection's reconnects: short at first, so that a router that
// just started is reached at once, and capped.
const (
	retryFirst = 100 * time.Millisecond
	retryMax   = 2 * time.Second
)

// remote makes a command body that talks to the router: it dials and runs
// f under the --timeout deadline (or minTimeout, when longer).
func (e *env) remote(minTimeout time.Duration, f func(ctx context.Context, c routerv1.SkillRouterClient, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := e.dial(); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), max(e.timeout, minTimeout))
		defer cancel()
		return f(ctx, routerv1.NewSkillRouterClient(e.conn), args)
	}
}

// dial connects to the router lazily (grpc.NewClient does no I/O).
func (e *env) dial() error {
	if e.conn != nil {
		return nil
	}
	conn, err := remote.Dial(e.addr, remote.DialOptions{Token: e.token, TLS: e.tls, OnHandshake: e.handshake.set, Extra: []grpc.DialOption{
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: retryFirst, Multiplier: 1.6, Jitter: 0.2, MaxDelay: retryMax},
			MinConnectTimeout: 5 * time.Second,
		}),
		grpc.WithUnaryInterceptor(e.retryUnavailable),
	}})
	if err != nil {
		return err
	}
	e.conn = conn
	return nil
}

// handshakeResult keeps how the last connection's handshake ended, and
// whether any connection got that far (a handshake runs, even without TLS,
// once the connection is made).
type handshakeResult struct {
	mu   sync.Mutex
	err  error
	seen bool
}

func (h *handshakeResult) set(err error) {
	h.mu.Lock()
	h.err, h.seen = err, true
	h.mu.Unlock()
}

func (h *handshakeResult) get() (err error, seen bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err, h.seen
}

// notReached is a call that found no router to talk to: nothing listens at
// the address, or the connection closed before the router spoke gRPC.
type notReached struct{ err error }

func (n notReached) Error() string              { return n.err.Error() }
func (n notReached) Unwrap() error              { return n.err }
func (n notReached) GRPCStatus() *status.Status { return status.Convert(n.err) }

// certificateError is a router whose TLS certificate did not verify.
type certificateError struct{ err error }

func (c certificateError) Error() string {
	return "the router's certificate did not verify: " + c.err.Error()
}
func (c certificateError) Unwrap() error { return c.err }

// tlsMismatch is a connection on which routerctl and the server at the
// address disagree on TLS: the server speaks TLS and routerctl did not
// (serverTLS), or the other way round.
type tlsMismatch struct {
	addr      string
	serverTLS bool
	err       error
}

func (t tlsMismatch) Error() string {
	if t.serverTLS {
		return fmt.Sprintf("the server at %s accepted the connection and closed it without a word of gRPC in clear text, as a router with TLS on does (%s)",
			t.addr, status.Convert(t.err).Message())
	}
	return fmt.Sprintf("the server at %s does not speak TLS, and routerctl connected with TLS (%s)", t.addr, status.Convert(t.err).Message())
}
func (t tlsMismatch) Unwrap() error              { return t.err }
func (t tlsMismatch) GRPCStatus() *status.Status { return status.New(codes.Unavailable, t.Error()) }

// hint says what to change on the command line.
func (t tlsMismatch) hint() string {
	if t.serverTLS {
		return "connect with TLS: --tls-ca FILE, the CA that signed the router's certificate (and --tls-cert FILE --tls-key FILE when it asks for client certificates)"
	}
	return "the router has TLS off: drop --tls-ca, --tls-cert and --tls-key, or turn TLS on at the router (tls.cert_file and tls.key_file)"
}

// reachedWithoutGRPC tells why a call that reached no router failed, when
// a connection was made: a certificate that did not verify, or TLS on one
// side only. It returns nil otherwise (nothing listens, or the reason is
// not known).
func (e *env) reachedWithoutGRPC(err error) error {
	herr, seen := e.handshake.get()
	var rh tls.RecordHeaderError
	switch {
	case !seen:
		return nil
	case herr != nil && unverified(herr):
		return certificateError{herr}
	case herr != nil && errors.As(herr, &rh):
		return tlsMismatch{addr: e.addr, err: err}
	case herr == nil && !e.tls.Enabled() && strings.Contains(status.Convert(err).Message(), "server preface"):
		// The connection was made, and closed before the server's
		// first HTTP/2 frame: what a TLS server does with a client
		// that speaks HTTP/2 in clear text.
		return tlsMismatch{addr: e.addr, serverTLS: true, err: err}
	}
	return nil
}

// unverified tells whether a handshake error is a certificate that did not
// verify (unknown authority, another host name, expired, ...).
func unverified(err error) bool {
	var ve *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &ve) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci)
}

// noRetryKey marks a context whose calls must not be retried.
type noRetryKey struct{}

// withoutRetry returns ctx whose calls report Unavailable at once (health
// probes, progress polls).
func withoutRetry(ctx context.Context) context.Context {
	return context.WithValue(ctx, noRetryKey{}, true)
}

// gaveUp is the last Unavailable answer of a call retried for a while.
type gaveUp struct {
	err   error
	after time.Duration
}

func (g gaveUp) Error() string              { return g.err.Error() }
func (g gaveUp) Unwrap() error              { return g.err }
func (g gaveUp) GRPCStatus() *status.Status { return status.Convert(g.err) }

// retryUnavailable retries a call the router answered Unavailable (it
// still builds its first index) with capped exponential backoff until
// --timeout has passed since the first attempt, and then returns the last
// answer. A call that reached no router (nothing listens, or the connection
// closed before the router answered) fails at once, as notReached, unless
// --timeout was given: then it is retried the same way, for a router that
// is starting. A certificate that did not verify fails at once, and so
// does a connection on which one side speaks TLS and the other not. Any other
// outcome returns at once.
func (e *env) retryUnavailable(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	delay := retryFirst
	var last error // the last Unavailable answer
	for {
		var p peer.Peer // set only when the call reached a router
		err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Peer(&p))...)
		if last != nil && (ctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded) {
			// The deadline ended an attempt (still connecting, or on the
			// router's side): the last answer says more than "deadline
			// exceeded".
			return gaveUp{last, time.Since(start)}
		}
		if status.Code(err) != codes.Unavailable {
			return err
		}
		if p.Addr == nil {
			if why := e.reachedWithoutGRPC(err); why != nil {
				return why
			}
			if !e.timeoutSet || ctx.Value(noRetryKey{}) != nil {
				return notReached{err}
			}
		}
		if ctx.Value(noRetryKey{}) != nil {
			return err
		}
		last = err
		left := e.timeout - time.Since(start)
		if left <= 0 {
			return gaveUp{err, time.Since(start)}
		}
		e.progress.Show("waiting for the router at %s (%s): retrying for %s more",
			e.addr, status.Convert(err).Message(), left.Round(time.Second))
		// Full jitter between half and all of the delay.
		wait := min(delay/2+rand.N(delay/2+1), left)
		select {
		case <-ctx.Done():
			return gaveUp{err, time.Since(start)}
		case <-time.After(wait):
		}
		delay = min(2*delay, retryMax)
	}
}
