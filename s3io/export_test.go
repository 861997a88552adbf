package s3io

import "time"

// SplitID lets the external tests build descriptors as the planner does.
var SplitID = splitID

// What the member module plans for a compressed object's segment (member/units.go), as the
// tests bound a segment's fetches and chunks by it.
const (
	unitSlack      = 64 << 10
	unitWindow     = 128 << 10
	unitChunkBytes = 1 << 20
)

// SetProgressQuiet sets how long a worker must read nothing before its progress lines end a
// stretch of reads with a last line, and returns what restores it.
func SetProgressQuiet(d time.Duration) (restore func()) {
	r := workerProgress
	r.mu.Lock()
	defer r.mu.Unlock()
	was := r.quiet
	r.quiet = d
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.quiet = was
	}
}

// ProgressIdle reports whether the worker's progress lines have ended their last stretch of
// reads: a read that begins now begins a new one, whose figures count from zero.
func ProgressIdle() bool {
	r := workerProgress
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.open
}
