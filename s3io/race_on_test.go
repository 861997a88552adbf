//go:build race

package s3io

// raceDetector is true in a -race build, whose decoding is several times slower: the
// largest tests read smaller objects under it.
const raceDetector = true
