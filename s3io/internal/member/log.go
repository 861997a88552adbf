package member

import "github.com/spate-io/beam-s3/s3io/internal/decode"

// Log holds the resume points a read keeps as it decodes, for a split inside its member:
// inflate checkpoints of a gzip object read whole, unit starts of a part read in chunks.
// Refine may run on the goroutine that answers a split while the read adds to it.
type Log struct{ c decode.Checkpoints }

// Refine gives h, a resume point inside the member being read, the latest point of the log
// at or before h.Offset, so that the residual's read fetches and decodes from there rather
// than from the member's first byte. An h at a stored offset, or a nil log, comes back unchanged, as
// does h when the log has nothing before it (h keeps the point it had).
func (l *Log) Refine(h Resume) Resume {
	if l == nil || h.StoredOffsets || !h.Known() {
		return h
	}
	if cp, ok := l.c.Before(h.Offset); ok {
		h.Checkpoint = cp.Encode()
	}
	return h
}

// checkpoints is what the decoders add to: nil for no log.
func (l *Log) checkpoints() *decode.Checkpoints {
	if l == nil {
		return nil
	}
	return &l.c
}

// disable empties the log for good: the read found that its records' offsets are not its
// stream's (an archive's entries), so no point in it can resume them.
func (l *Log) disable() {
	if l != nil {
		l.c.Disable()
	}
}
