//go:build !race

package bigobject

const raceDetector = false
