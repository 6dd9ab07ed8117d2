package auth

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// cycle makes one attempt with each of five wrong tokens, as a client that
// cycles through a list of stale tokens does, and returns how many were
// refused (not checked).
func cycle(l *FailureLimiter, ctx context.Context) int {
	refused := 0
	for i := range 5 {
		if _, err := l.Attempt(ctx, "/m", nil, fmt.Sprint("stale-", i), func() string { return ReasonBadToken }); err != nil {
			refused++
		}
	}
	return refused
}

// TestLocalCallersAreToldApart: a local client cycling five wrong tokens
// (it spent the budget of 127.0.0.1 and locked out every local client, the
// valid admin token included) is told each time that its token is wrong:
// after its first round, each is a repeat, which guesses nothing and spends
// nothing, whichever local connection presents it. A valid token on
// another loopback connection, IPv4 or IPv6, is served at every step. A
// local guesser (new tokens each time) is limited on its connection only,
// and a new connection of it starts a budget of its own. Local failures
// leave the global budget alone, while a remote address is still one
// caller, whatever its ports.
func TestLocalCallersAreToldApart(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	l := newTestLimiter(clock)
	guesser := from("127.0.0.1:40009")
	refused, guessRefused := 0, 0
	for round := range 10 {
		refused += cycle(l, from(fmt.Sprintf("127.0.0.1:%d", 40001+round%2)))
		for range 3 {
			if guess(l, guesser) != nil {
				guessRefused++
			}
		}
		for _, valid := range []string{"127.0.0.1:40002", "[::1]:40003"} {
			if err := login(l, from(valid)); err != nil {
				t.Fatalf("round %d: the valid token on %s: %v", round, valid, err)
			}
		}
	}
	if refused != 0 {
		t.Errorf("the client cycling five wrong tokens was refused %d times of 50, want never (its repeats guess nothing)", refused)
	}
	if guessRefused != 30-DefaultClientFailureBurst {
		t.Errorf("the guesser was refused %d times of 30, want %d", guessRefused, 30-DefaultClientFailureBurst)
	}
	if err := guess(l, from("127.0.0.1:40010")); err != nil {
		t.Errorf("a new connection of the guesser: %v, want a budget of its own", err)
	}
	// 60 local connections failing 10 times each: none of it is counted
	// against remote callers.
	for c := range 60 {
		ctx := from(fmt.Sprintf("127.0.0.1:%d", 41000+c))
		for range DefaultClientFailureBurst {
			guess(l, ctx)
		}
	}
	if err := guess(l, from("198.51.100.7:443")); err != nil {
		t.Errorf("a remote newcomer after 600 local failures: %v; local failures must not spend the global budget", err)
	}
	for i := range DefaultClientFailureBurst {
		if err := guess(l, from(fmt.Sprintf("203.0.113.5:%d", 5000+i))); err != nil {
			t.Fatalf("remote guess %d: %v", i+1, err)
		}
	}
	if err := login(l, from("203.0.113.5:6000")); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a remote address that spent its budget from many ports, with the right token: %v, want refused unchecked", err)
	}
}

// TestUnixPeersAreToldApart: on the state folder's socket a process is
// one caller, whatever its connections: one guessing is limited, another
// process, or another user, is not.
func TestUnixPeersAreToldApart(t *testing.T) {
	l := newTestLimiter(&fakeClock{t: time.Unix(1e9, 0)})
	viaSocket := func(p UnixPeer) context.Context {
		return peer.NewContext(context.Background(), &peer.Peer{Addr: p})
	}
	stale := UnixPeer{PID: 4242, UID: 1000}
	refused := 0
	for range 4 {
		for range 5 {
			if guess(l, viaSocket(stale)) != nil {
				refused++
			}
		}
	}
	if refused != 20-DefaultClientFailureBurst {
		t.Errorf("the guessing process was refused %d times of 20, want %d", refused, 20-DefaultClientFailureBurst)
	}
	for _, p := range []UnixPeer{{PID: 4243, UID: 1000}, {PID: 4242, UID: 0}} {
		if err := login(l, viaSocket(p)); err != nil {
			t.Errorf("%v with the valid token: %v", p, err)
		}
	}
	if c := CallerOf(viaSocket(stale)); !c.Local || c.Key != "unix:pid=4242,uid=1000" {
		t.Errorf("CallerOf a socket peer = %+v", c)
	}
}

// TestPeerCredentials connects to a Unix socket listener made by
// PeerCredentials: the connection it accepts names this process and user,
// as the kernel reports them.
func TestPeerCredentials(t *testing.T) {
	dir, err := os.MkdirTemp("", "peercred")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	inner, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	lis := PeerCredentials(inner)
	defer lis.Close()
	go func() {
		if c, err := net.Dial("unix", filepath.Join(dir, "s")); err == nil {
			time.Sleep(100 * time.Millisecond)
			c.Close()
		}
	}()
	c, err := lis.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, ok := c.RemoteAddr().(UnixPeer)
	if !ok {
		t.Skipf("no peer credentials on this system (remote address %v)", c.RemoteAddr())
	}
	if p.PID != os.Getpid() || p.UID != os.Getuid() {
		t.Errorf("peer %+v, want pid %d, uid %d", p, os.Getpid(), os.Getuid())
	}
	if got := CallerOf(peer.NewContext(context.Background(), &peer.Peer{Addr: c.RemoteAddr()})); !got.Local || got.Key != p.String() {
		t.Errorf("CallerOf = %+v", got)
	}
}

// TestCallersCanBeReplaced: what a failure is counted against is the
// limiter's Callers, which a deployment behind a proxy may replace to name
// the client the proxy forwards for (here from a header the proxy sets):
// two clients behind one proxy connection then have budgets of their own.
func TestCallersCanBeReplaced(t *testing.T) {
	l := newTestLimiter(&fakeClock{t: time.Unix(1e9, 0)})
	l.Callers = func(ctx context.Context) Caller {
		md, _ := metadata.FromIncomingContext(ctx)
		if fwd := md.Get("x-forwarded-for"); len(fwd) == 1 {
			return callerOfAddr(&net.TCPAddr{IP: net.ParseIP(fwd[0])})
		}
		return CallerOf(ctx)
	}
	proxy := from("192.0.2.10:8443")
	forwardedFor := func(client string) context.Context {
		return metadata.NewIncomingContext(proxy, metadata.Pairs("x-forwarded-for", client))
	}
	for range DefaultClientFailureBurst {
		guess(l, forwardedFor("203.0.113.1"))
	}
	if err := guess(l, forwardedFor("203.0.113.1")); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("the guessing client behind the proxy: %v, want refused", err)
	}
	if err := login(l, forwardedFor("198.51.100.2")); err != nil {
		t.Errorf("another client behind the same proxy: %v", err)
	}
}

// TestLocalFailuresAreAuditedBounded: a local process that guesses on a
// new connection each time is a new caller each time; the audit records
// of their first failures are bounded like the router-wide limit (100,
// then 5 a second), and the next record says how many were left out.
func TestLocalFailuresAreAuditedBounded(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	l := newTestLimiter(clock)
	var audit auditLog
	for c := range 1000 {
		if _, err := l.Attempt(from(fmt.Sprintf("127.0.0.1:%d", 20000+c)), "/m", &audit, newGuess(), func() string { return ReasonBadToken }); err != nil {
			t.Fatalf("connection %d refused: %v", c, err)
		}
	}
	if n := len(audit.audited()); n != DefaultGlobalFailureBurst {
		t.Errorf("%d audit records for 1,000 local callers' first failures at once, want %d", n, DefaultGlobalFailureBurst)
	}
	clock.Add(time.Second)
	l.Attempt(from("127.0.0.1:30001"), "/m", &audit, newGuess(), func() string { return ReasonBadToken })
	got := audit.audited()
	if last := got[len(got)-1]; last.Unaudited != 900 {
		t.Errorf("the next audit record stands for %d left out, want 900", last.Unaudited)
	}
}
