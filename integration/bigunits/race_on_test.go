//go:build race

package bigunits

// raceDetector is true in a -race build, whose shadow memory multiplies a process's RSS
// (the Go race detector documents 5-10x): the memory bound is checked without it.
const raceDetector = true
