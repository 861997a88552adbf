//go:build !race

package bigunits

const raceDetector = false
