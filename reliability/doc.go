// Package reliability is the router's black-box reliability and security
// suite. Its tests build the real router and routerctl binaries, start
// routers as subprocesses on loopback ports, and talk to them over gRPC only:
// kill -9 at random points, damaged caches, full disks, a removed model, a
// tree swapped under load, a load and soak run, hostile resource paths, YAML
// bombs and token guessing.
//
// `MCPSAG_TESTS=full go test ./reliability` runs a bounded form of every
// test (a few minutes in all; CI runs it); without MCPSAG_TESTS=full, as in
// the quick run of the README's test command, the load and soak run and the
// tree swap under load are left out. MCPSAG_RELIABILITY=full runs the full
// figures, which docs/reliability.md reports:
//
//	MCPSAG_RELIABILITY=full go test ./reliability -timeout 2h -v
//
// The package has no API; this file only documents it.
package reliability
