//go:build race

package eval_test

// raceDetector is set when the tests run with -race.
const raceDetector = true
