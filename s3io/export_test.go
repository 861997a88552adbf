package s3io

// SplitID lets the external tests build descriptors as the planner does.
var SplitID = splitID

// What the member module plans for a compressed object's segment (member/units.go), as the
// tests bound a segment's fetches and chunks by it.
const (
	unitSlack      = 64 << 10
	unitWindow     = 128 << 10
	unitChunkBytes = 1 << 20
)
