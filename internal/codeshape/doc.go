// Package codeshape holds the module's checks on the shape of its own Go
// code, run by `go test` like any other test: no non-test function has a
// cyclomatic complexity over 25, counted as gocyclo counts it; no non-test
// function is over 60 lines unless a paragraph of its doc comment starts
// with "Length:" and says why it is one function, and at most 15 are;
// no non-test Go file under internal/ has more than 700 lines; and the gRPC
// front and the router reach only the packages they may.
//
// The package has no API; this file only documents it.
package codeshape
