//go:build race

package embed

// raceDetector is set when the tests run under the race detector.
const raceDetector = true
