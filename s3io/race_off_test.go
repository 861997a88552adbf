//go:build !race

package s3io

const raceDetector = false
